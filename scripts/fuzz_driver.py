"""Fuzz ``stablehlo-sparsity-opt`` with seeded mutations of the hostile corpus and the lit tests.

    python scripts/fuzz_driver.py --inputs 2000 --seconds 600 --seed 0 [--timeout 20] [--save DIR]

Seeds: every ``tests/support/hostile/*.mlir`` and every ``// -----`` chunk of ``lit_tests/*.mlir``.  Each input is a
seed put through one to four random mutations — byte flips, byte insertions and deletions, line deletions,
duplications and swaps, token swaps, "interesting" token substitutions (types such as ``f8E4M3FN``, ``i4``,
``tensor<?x``; numbers such as ``0``, ``-1``, ``2147483648``, ``100000``), truncation, and splices of two
seeds — all drawn from one ``random.Random(seed)``, so a run is reproducible from its seed.

Inputs run through the real driver (``stablehlo_sparsity.tools.driver.main``) in a *worker process* that handles
many inputs (importing JAX per input would cost seconds); the parent gives each input ``--timeout`` seconds.
Outcomes:

* ``ok`` (exit 0) and ``error`` (exit 1 with a diagnostic) are both fine: bad input deserves a clear error;
* findings: ``internal`` (exit 2: an exception that is not a ``SparsityError``), ``traceback`` (a Python
  traceback on stderr), ``crash`` (the worker died, e.g. a segfault in MLIR), ``hang`` (over the timeout),
  ``oom`` (the worker's address space limit, ``--memory-gb``, was hit).

The budget is ``--inputs`` inputs or ``--seconds`` seconds, whichever comes first.  The exit status is 1 if
any finding occurred; ``--save DIR`` keeps each finding's input for triage (a new hostile corpus file).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The hostile corpus, the first half of the seeds.
HOSTILE = ROOT / "tests" / "support" / "hostile"
FINDINGS = ("internal", "traceback", "crash", "hang", "oom")
#: Seeds of known, reported problems (they would be re-found by every run): the analysis takes minutes on
#: this one (tests/analysis/test_regressions.py, xfail).
SKIP_SEEDS = {"long_known_loop.mlir"}

INTERESTING_TOKENS = [
    "f8E4M3FN", "i4", "f16", "bf16", "i1", "complex<f32>", "tensor<?x", "tensor<*x", "tensor<0x", "tensor<1x",
    "0", "-1", "1", "2", "7", "2147483647", "2147483648", "-2147483649", "9223372036854775807", "100000",
    "4294967296", "0x7FC00000", "nan", "inf", "-0.0", "1.0e308", "dense<>", "dense<[]>", "{}", "()", "[]",
    "%0", "%arg0", "@main", "@f", "func.call @main", "stablehlo.while", "stablehlo.case", "dims = []",
    "dimensions = [0]", "stablehlo.return", "return", "->", ":", ",", "x", "\n", "//", "\"", "^bb1:",
]
_TOKEN = re.compile(r"%[\w#.]+|@[\w.]+|[A-Za-z_][\w.]*|-?\d+(?:\.\d+)?(?:e[+-]?\d+)?|\S")


# ---------------------------------------------------------------------------- seeds and mutations
def load_seeds(extra_dirs=()) -> list[tuple[str, bytes]]:
    seeds = []
    corpus = sorted(HOSTILE.glob("*.mlir"))
    if not corpus:  # a moved corpus must not leave the fuzzer mutating the lit tests alone, silently
        raise FileNotFoundError(f"no hostile corpus in {HOSTILE}")
    for p in corpus:
        if p.name not in SKIP_SEEDS:
            seeds.append((p.name, p.read_bytes()))
    for d in [ROOT / "lit_tests", *map(Path, extra_dirs)]:
        for p in sorted(d.glob("*.mlir")):
            chunks = re.split(rb"\n// -----[^\n]*\n", p.read_bytes())
            for i, c in enumerate(chunks):
                # drop RUN lines: they are for lit, not the parser
                c = b"\n".join(line for line in c.split(b"\n") if not line.lstrip().startswith(b"// RUN"))
                seeds.append((f"{p.name}#{i}", c))
    return seeds


def _lines(b: bytes) -> list[bytes]:
    return b.split(b"\n")


def mutate(data: bytes, rng: random.Random, seeds: list[tuple[str, bytes]]) -> tuple[bytes, list[str]]:
    """One to four random mutations of ``data``; returns the input and the names of the mutations."""
    names = []
    # mostly one mutation: stacked mutations nearly always end in a parse error, one keeps more inputs valid
    for _ in range(rng.choices([1, 2, 3, 4], weights=[6, 2, 1, 1])[0]):
        kind = rng.choice(["flip", "insert", "delete_bytes", "delete_line", "dup_line", "swap_lines",
                           "swap_tokens", "token", "token", "number", "truncate", "splice"])
        names.append(kind)
        if kind == "flip" and data:
            i = rng.randrange(len(data))
            data = data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1:]
        elif kind == "insert":
            i = rng.randrange(len(data) + 1)
            data = data[:i] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 4))) + data[i:]
        elif kind == "delete_bytes" and data:
            i = rng.randrange(len(data))
            data = data[:i] + data[i + rng.randint(1, 16):]
        elif kind in ("delete_line", "dup_line", "swap_lines"):
            lines = _lines(data)
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            if kind == "delete_line":
                del lines[i]
            elif kind == "dup_line":
                lines.insert(j, lines[i])
            else:
                lines[i], lines[j] = lines[j], lines[i]
            data = b"\n".join(lines)
        elif kind in ("swap_tokens", "token", "number"):
            text = data.decode("utf-8", "surrogateescape")
            toks = list(_TOKEN.finditer(text))
            if not toks:
                continue
            if kind == "number":
                nums = [m for m in toks if re.fullmatch(r"-?\d+", m.group())]
                if not nums:
                    continue
                m = rng.choice(nums)
                new = rng.choice(["0", "-1", "1", "3", "64", "2147483648", "100000", "-100000", "9223372036854775807"])
                text = text[:m.start()] + new + text[m.end():]
            elif kind == "token":
                m = rng.choice(toks)
                text = text[:m.start()] + rng.choice(INTERESTING_TOKENS) + text[m.end():]
            else:
                if len(toks) < 2:
                    continue
                a, b = rng.sample(toks, 2)
                if a.start() > b.start():
                    a, b = b, a
                if a.end() <= b.start():
                    text = text[:a.start()] + b.group() + text[a.end():b.start()] + a.group() + text[b.end():]
            data = text.encode("utf-8", "surrogateescape")
        elif kind == "truncate" and data:
            data = data[: rng.randrange(len(data))]
        elif kind == "splice":
            other = rng.choice(seeds)[1]
            i, j = rng.randrange(len(data) + 1), rng.randrange(len(other) + 1)
            data = data[:i] + other[j:]
    return data, names


# ---------------------------------------------------------------------------- the worker process
WORKER = r"""
import contextlib, io, json, os, sys, traceback
if os.environ.get("FUZZ_MEMORY_BYTES"):
    import resource
    lim = int(os.environ["FUZZ_MEMORY_BYTES"])
    resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
from stablehlo_sparsity.tools import driver
out_stream = sys.stdout
for line in sys.stdin:
    job = json.loads(line)
    out, err = io.StringIO(), io.StringIO()
    kind = "done"
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = driver.main(job["argv"])
        except MemoryError:
            code, kind = -1, "oom"
        except BaseException:
            code, kind = -1, "raised"
            traceback.print_exc(file=err)
    e = err.getvalue()
    if kind == "done" and code == 2 and "MemoryError" in e:
        kind = "oom"
    lines = e.splitlines()
    out_stream.write(json.dumps({
        "code": code, "kind": kind, "traceback": "Traceback (most recent call last)" in e,
        "internal": "internal error" in e, "diagnostic": any(": error: " in l for l in lines),
        "first": lines[0][:300] if lines else "", "tail": e[-1500:]}) + "\n")
    out_stream.flush()
"""


class Worker:
    def __init__(self, memory_bytes: int | None):
        env = dict(os.environ, STABLEHLO_SPARSITY_TRACEBACK="", PYTHONUNBUFFERED="1", JAX_PLATFORMS="cpu",
                   TF_CPP_MIN_LOG_LEVEL="3")
        if memory_bytes:
            env["FUZZ_MEMORY_BYTES"] = str(memory_bytes)
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, env=env, cwd=str(ROOT))

    def run(self, argv: list[str], timeout: float) -> dict:
        """One input; ``{"outcome": ..., ...}``.  The worker is dead afterwards on crash/hang."""
        import selectors

        try:
            self.proc.stdin.write(json.dumps({"argv": argv}) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return {"outcome": "crash", "detail": f"worker gone (exit {self.proc.poll()})"}
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        ready = sel.select(timeout)
        sel.close()
        if not ready:
            self.kill()
            return {"outcome": "hang", "detail": f"no answer within {timeout:.0f} s"}
        line = self.proc.stdout.readline()
        if not line:
            rc = self.proc.wait()
            return {"outcome": "crash", "detail": f"worker died with {'signal ' + str(-rc) if rc < 0 else rc}"}
        r = json.loads(line)
        if r["kind"] == "oom":
            outcome = "oom"
        elif r["kind"] == "raised" or r["traceback"]:
            outcome = "traceback"
        elif r["code"] == 2 or r["internal"]:
            outcome = "internal"
        elif r["code"] == 0:
            outcome = "ok"
        elif r["code"] == 1 and r["diagnostic"]:
            outcome = "error"
        else:  # exit 1 without a FILE:LINE:COL: error: diagnostic
            outcome = "internal"
        detail = r["first"] if outcome in ("ok", "error") else (r["tail"].strip().splitlines() or [""])[-1][:300]
        return {"outcome": outcome, "detail": detail}

    def kill(self):
        try:
            self.proc.kill()
            self.proc.wait(timeout=10)
        except Exception:
            pass

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except Exception:
            self.kill()


MODES = [["--emit=pattern"], ["--emit=pattern"], ["--emit=json"], ["--sparsity-annotate"],
         ["--sparsity-fold-constants", "--sparsity-annotate"], ["--emit=pattern", "--on-unknown=conservative"],
         ["--emit=picture", "--allow-unregistered-dialect", "--on-unknown=conservative"]]


def fuzz(inputs: int, seconds: float, seed: int, timeout: float, save: str | None = None,
         memory_gb: float | None = 6.0, verbose: bool = False) -> dict:
    """Run the fuzz loop; returns a summary dict (see ``main`` for the printed report)."""
    rng = random.Random(seed)
    seeds = load_seeds()
    counts: Counter = Counter()
    findings: list[dict] = []
    mem = int(memory_gb * 2**30) if memory_gb else None
    worker = Worker(mem)
    tmpdir = tempfile.mkdtemp(prefix="shs-fuzz-")
    t0 = time.monotonic()
    n = 0
    slowest = (0.0, "")
    try:
        while n < inputs and time.monotonic() - t0 < seconds:
            name, data = rng.choice(seeds)
            data, muts = mutate(data, rng, seeds)
            mode = rng.choice(MODES)
            path = os.path.join(tmpdir, f"input_{n}.mlir")
            with open(path, "wb") as f:
                f.write(data)
            t = time.monotonic()
            r = worker.run([path, *mode], timeout)
            dt = time.monotonic() - t
            slowest = max(slowest, (dt, f"{name} {muts} {mode}"))
            counts[r["outcome"]] += 1
            n += 1
            if r["outcome"] in FINDINGS:
                finding = {"index": n - 1, "seed": name, "mutations": muts, "mode": mode, **r}
                findings.append(finding)
                if save:
                    os.makedirs(save, exist_ok=True)
                    with open(os.path.join(save, f"finding_{seed}_{n - 1}_{r['outcome']}.mlir"), "wb") as f:
                        f.write(data)
                if verbose:
                    print(f"[{n - 1}] {r['outcome']}: {name} {muts} {mode}: {r['detail']}", file=sys.stderr)
                if r["outcome"] in ("crash", "hang"):
                    worker = Worker(mem)
            os.unlink(path)
    finally:
        worker.close()
        try:
            os.rmdir(tmpdir)
        except OSError:
            pass
    elapsed = time.monotonic() - t0
    return {"inputs": n, "seconds": round(elapsed, 1), "seed": seed, "timeout": timeout, "seeds": len(seeds),
            "outcomes": dict(counts), "findings": findings, "slowest": {"seconds": round(slowest[0], 2),
                                                                          "input": slowest[1]}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inputs", type=int, default=1000, help="maximum number of inputs (default 1000)")
    ap.add_argument("--seconds", type=float, default=300.0, help="time budget in seconds (default 300)")
    ap.add_argument("--seed", type=int, default=0, help="random seed: the same seed gives the same inputs")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per input before it counts as a hang")
    ap.add_argument("--memory-gb", type=float, default=6.0, help="address-space limit of the worker (0: none)")
    ap.add_argument("--save", default=None, metavar="DIR", help="keep each finding's input in DIR")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    ap.add_argument("-v", "--verbose", action="store_true", help="print findings as they happen")
    args = ap.parse_args(argv)
    s = fuzz(args.inputs, args.seconds, args.seed, args.timeout, args.save, args.memory_gb or None, args.verbose)
    if args.json:
        print(json.dumps(s, indent=1))
    else:
        rate = s["inputs"] / s["seconds"] if s["seconds"] else 0.0
        print(f"fuzzed {s['inputs']} inputs in {s['seconds']} s ({rate:.1f}/s) from {s['seeds']} seeds, "
              f"seed={s['seed']}, timeout={s['timeout']} s")
        print("outcomes: " + ", ".join(f"{k}={v}" for k, v in sorted(s["outcomes"].items())))
        print(f"slowest input: {s['slowest']['seconds']} s ({s['slowest']['input']})")
        print(f"findings: {len(s['findings'])}")
        for f in s["findings"][:20]:
            print(f"  [{f['index']}] {f['outcome']}: seed {f['seed']}, mutations {f['mutations']}, "
                  f"mode {' '.join(f['mode'])}: {f['detail']}")
    return 1 if s["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
