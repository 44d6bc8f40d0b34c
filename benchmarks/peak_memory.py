"""The resident memory of this process, for the benchmarks that report a stage's peak (Linux ``/proc``).

A stage's peak is measured by resetting the kernel's high-water mark to the current RSS just before it
(:func:`reset_peak`) and reading ``VmHWM`` after it (:func:`memory_status`)."""

from __future__ import annotations

import gc


def memory_status() -> dict[str, int]:
    """``{"VmRSS": …, "VmHWM": …}`` in bytes: the resident memory now and its high-water mark."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) * 1024
    return out


def reset_peak(collect: bool = True) -> int:
    """Collect garbage (unless ``collect`` is false), reset the high-water mark to the current RSS
    (``/proc/self/clear_refs``; where that is not allowed the peak stays the process's since it started) and
    return the RSS."""
    if collect:
        gc.collect()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    return memory_status()["VmRSS"]
