"""The memory budget of an analysis: what a pattern nonzero costs, how much memory there is, the default limit
on a pattern's size (``AnalysisOptions.max_pattern_nnz``), the one error for a pattern that would not fit, and
the nonzero budget of the running analysis (:func:`nnz_budget`, checked by :func:`check_nnz` before every
allocation of pattern entries)."""

from __future__ import annotations

import contextlib
import contextvars
import os
import time

from ..errors import PatternTooLargeError

__all__ = ["BYTES_PER_NONZERO", "MEMORY_FRACTION", "available_memory", "default_max_pattern_nnz",
           "default_pattern_limit", "too_large", "nnz_budget", "check_nnz"]

#: What the analysis costs per pattern nonzero at its peak: the pattern itself (an ``int32`` column index and
#: a bool per nonzero, ``int32`` row pointers) and the index parts it is built from, with every temporary
#: bounded by a row block (lattice/representations/materialize.py).  Measured by ``benchmarks/memory.py`` (peak
#: RSS of detection per nonzero: 6 on a dense FFT pattern, 11–12 on the 2-D Brusselator); quoted by the error
#: message and used for the default limit.
BYTES_PER_NONZERO = 12

#: The default ``max_pattern_nnz`` lets a pattern take this fraction of the memory available when the
#: options are made (``MemAvailable``, or the cgroup's limit if lower) at :data:`BYTES_PER_NONZERO`.
MEMORY_FRACTION = 0.75

#: The default limit when the available memory cannot be read (and the floor of the derived one).
FALLBACK_MAX_PATTERN_NNZ = 500_000_000
MIN_DEFAULT_MAX_PATTERN_NNZ = 1_000_000

_LIMIT_OVERRIDE: contextvars.ContextVar[int | None] = contextvars.ContextVar("max_pattern_nnz", default=None)


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_available() -> int | None:
    """What the process's cgroup still allows (v2 ``memory.max``, v1 ``memory.limit_in_bytes``), if limited."""
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            with open(limit_file) as f:
                text = f.read().strip()
            if text == "max":
                return None
            limit = int(text)
            if limit >= 2**60:  # v1's "no limit"
                return None
            with open(usage_file) as f:
                return max(0, limit - int(f.read().strip()))
        except (OSError, ValueError):
            continue
    return None


#: :func:`available_memory` is read again after this many seconds (reading ``/proc`` costs about 0.1 ms: more than
#: the whole analysis of a small program).
MEMORY_READ_INTERVAL = 0.5
_LAST_READ: list = [-1e9, None]


def available_memory() -> int | None:
    """Bytes the process can still allocate without swapping or being killed, as far as Linux says
    (``MemAvailable``, and the cgroup limit when there is one); ``None`` where neither can be read.  Read at
    most every :data:`MEMORY_READ_INTERVAL` seconds."""
    now = time.monotonic()
    if now - _LAST_READ[0] < MEMORY_READ_INTERVAL:
        return _LAST_READ[1]
    value = _read_available_memory()
    _LAST_READ[:] = [now, value]
    return value


def _read_available_memory() -> int | None:
    known = [b for b in (_meminfo_available(), _cgroup_available()) if b is not None]
    if not known and hasattr(os, "sysconf"):
        try:
            known = [os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")]
        except (ValueError, OSError):
            pass
    return min(known) if known else None


def default_max_pattern_nnz() -> int:
    """The default ``AnalysisOptions.max_pattern_nnz``: the limit set by :func:`default_pattern_limit` (the
    driver's ``--max-pattern-nnz``), else :data:`MEMORY_FRACTION` of :func:`available_memory` at
    :data:`BYTES_PER_NONZERO` (at least :data:`MIN_DEFAULT_MAX_PATTERN_NNZ`), else
    :data:`FALLBACK_MAX_PATTERN_NNZ`."""
    override = _LIMIT_OVERRIDE.get()
    if override is not None:
        return override
    avail = available_memory()
    if avail is None:
        return FALLBACK_MAX_PATTERN_NNZ
    return max(MIN_DEFAULT_MAX_PATTERN_NNZ, int(avail * MEMORY_FRACTION) // BYTES_PER_NONZERO)


@contextlib.contextmanager
def default_pattern_limit(limit: int | None):
    """Within this block, options made without an explicit ``max_pattern_nnz`` (the passes', the driver's)
    get ``limit`` (``None``: the memory-derived default)."""
    token = _LIMIT_OVERRIDE.set(None if limit is None else int(limit))
    try:
        yield
    finally:
        _LIMIT_OVERRIDE.reset(token)


def _gib(nbytes: float) -> str:
    if nbytes >= 2**30:
        return f"{nbytes / 2**30:,.1f} GiB"
    return f"{nbytes / 2**20:.0f} MiB" if nbytes >= 2**20 else f"{int(nbytes):,} bytes"


def too_large(subject: str, count: int, limit: int, location: str | None = None, *,
              unit: str = "elements") -> PatternTooLargeError:
    """The error for a pattern that would not fit: what, how many, the limit, the cost, how to raise it."""
    need = count * BYTES_PER_NONZERO
    if unit == "elements":
        per_entry = (f"its pattern needs at least one entry per element, and the analysis about {BYTES_PER_NONZERO} "
                     f"bytes per entry at its peak: at least {_gib(need)}")
    else:
        per_entry = f"the analysis needs about {BYTES_PER_NONZERO} bytes per nonzero at its peak: {_gib(need)}"
    avail = available_memory()
    if avail is not None:
        per_entry += f"; {_gib(avail)} available now"
    return PatternTooLargeError(
        f"{subject} {count:,} {unit}, above the limit max_pattern_nnz={limit:,} ({per_entry}); refusing before "
        f"allocating. Raise the limit with AnalysisOptions(max_pattern_nnz=...) or the driver's "
        f"--max-pattern-nnz=N if the memory is available",
        location)


#: The nonzero budget of the running analysis (set by the interpreter from ``AnalysisOptions.max_pattern_nnz``).
_NNZ_BUDGET: contextvars.ContextVar[int | None] = contextvars.ContextVar("nnz_budget", default=None)


@contextlib.contextmanager
def nnz_budget(limit: int | None):
    """Within this block, materializing a lattice with more than ``limit`` nonzeros raises
    :class:`PatternTooLargeError` *before* the arrays are allocated."""
    token = _NNZ_BUDGET.set(limit)
    try:
        yield
    finally:
        _NNZ_BUDGET.reset(token)


def check_nnz(nnz: int, what: str = "a value's index sets") -> None:
    """Refuse an allocation of ``nnz`` pattern entries above the active budget."""
    limit = _NNZ_BUDGET.get()
    if limit is not None and nnz > limit:
        raise too_large(f"{what} would need", nnz, limit, unit="nonzeros")
