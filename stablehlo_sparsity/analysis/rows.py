"""The one split of a pattern's rows among processes (streamed detection, blocked and distributed evaluation)."""

from __future__ import annotations

__all__ = ["process_row_range"]


def process_row_range(m: int, process_id: int, num_processes: int) -> tuple[int, int]:
    """The rows ``[lo, hi)`` of process ``process_id`` of ``num_processes``: ``⌈m/N⌉`` consecutive rows each
    (the last ones shorter or empty).  The one split of rows among processes:
    :func:`stablehlo_sparsity.derivatives.distributed.row_block`, the streamed
    detection (:func:`stablehlo_sparsity.analysis.streaming.process_rows`) and the blocked evaluation use it.

    Examples:
        >>> from stablehlo_sparsity.derivatives.distributed import process_row_range
        >>> [process_row_range(10, i, 4) for i in range(4)]
        [(0, 3), (3, 6), (6, 9), (9, 10)]
    """
    per = -(-m // num_processes)
    return min(m, process_id * per), min(m, (process_id + 1) * per)
