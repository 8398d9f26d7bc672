from collections.abc import Iterable

def calibrate(
    small: int = 4096, chunk: int = 131072, reps: int = 7
) -> dict[tuple[str, str], tuple[tuple[float, float], tuple[float, float]]]: ...
def calibrate_thresholds(
    sizes: Iterable[int] | None = None,
    reps: int = 9,
    ratios: dict[tuple[str, str, bool], dict[int, float]] | None = None,
) -> dict[tuple[str, str], tuple[int, int]]: ...
