OPS: tuple[str, ...]
PIECE_BYTES: int
NOGIL_BYTES: int
MAX_ALIGN: int

def set_piece_bytes(nbytes: int) -> int: ...
