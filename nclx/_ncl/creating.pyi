OPS: tuple[str, ...]
PIECE_BYTES: int
COLD_BYTES: int
WARM_NS: int
NOGIL_BYTES: int

def set_thresholds(
    piece_bytes: int | None = None, cold_bytes: int | None = None
) -> tuple[int, int]: ...
