OPS: tuple[str, ...]
PIECE_BYTES: int
NOGIL_BYTES: int

def set_piece_bytes(nbytes: int) -> int: ...
