"""``python -m stablehlo_sparsity.launch -n N script.py [args]``: run ``N`` processes of a script on this
machine, joined in one JAX distributed runtime.

Each process gets the coordinator address (``127.0.0.1`` at a free port: loopback only), the process count and
its id in the environment (see :mod:`stablehlo_sparsity.derivatives.distributed`); the script calls
``stablehlo_sparsity.derivatives.distributed.initialize()``.  Output goes straight to this terminal.  The exit code is 0
when every process exits with 0; otherwise the launcher stops the others and exits with the first failing
process's code (or 1), naming it on stderr.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time

from .derivatives.distributed import COORDINATOR, NUM_PROCESSES, PROCESS_ID

__all__ = ["free_port", "launch", "main"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def launch(script: str, args: list[str], n: int, *, timeout: float | None = None, python: str | None = None) -> int:
    """Run ``n`` processes of ``script`` and return the exit code (0: all succeeded)."""
    if n < 1:
        print(f"launch: -n must be at least 1, got {n}", file=sys.stderr)
        return 2
    if not os.path.isfile(script):
        print(f"launch: no such script: {script}", file=sys.stderr)
        return 2
    address = f"127.0.0.1:{free_port()}"
    procs = []
    for i in range(n):
        env = dict(os.environ, **{COORDINATOR: address, NUM_PROCESSES: str(n), PROCESS_ID: str(i)})
        procs.append(subprocess.Popen([python or sys.executable, script, *args], env=env))
    deadline = None if timeout is None else time.monotonic() + timeout
    failed: tuple[int, int] | None = None
    try:
        while any(p.poll() is None for p in procs):
            for i, p in enumerate(procs):
                if failed is None and p.returncode not in (None, 0):
                    failed = (i, p.returncode)
            if failed is not None or (deadline is not None and time.monotonic() > deadline):
                break
            time.sleep(0.05)
    except KeyboardInterrupt:
        failed = failed or (-1, 130)
    for i, p in enumerate(procs):
        if failed is None and p.poll() not in (None, 0):
            failed = (i, p.returncode)
    if any(p.poll() is None for p in procs):
        if failed is None:
            print(f"launch: timed out after {timeout} s; stopping the processes", file=sys.stderr)
            failed = (-1, 124)
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    if failed is None:
        return 0
    i, code = failed
    if i >= 0:
        print(f"launch: process {i} of {n} exited with code {code}; the others were stopped", file=sys.stderr)
    return code if isinstance(code, int) and 0 < code < 256 else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m stablehlo_sparsity.launch",
                                     description="Run N processes of a script in one JAX distributed runtime.")
    parser.add_argument("-n", "--num-processes", type=int, default=2, help="number of processes (default 2)")
    parser.add_argument("--timeout", type=float, default=None, help="stop all processes after this many seconds")
    parser.add_argument("script",
                        help="the Python script; it calls stablehlo_sparsity.derivatives.distributed.initialize()")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    ns = parser.parse_args(argv)
    return launch(ns.script, ns.args, ns.num_processes, timeout=ns.timeout)


if __name__ == "__main__":
    sys.exit(main())
