PIECE_BYTES: int
COLD_BYTES: int
WARM_NS: int

def split_calls() -> int: ...
def tune(
    piece_bytes: int | None = None, cold_bytes: int | None = None
) -> tuple[int, int]: ...
