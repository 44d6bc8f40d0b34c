"""Loop benchmark: ours vs asdex on programs whose pattern is built by a loop, in one process.

    python benchmarks/loops.py                      # every problem (asdex on the 10,000-step RNN takes minutes)
    python benchmarks/loops.py --quick              # smaller sizes
    python benchmarks/loops.py --only rnn,heat      # problems whose key starts with one of these
    python benchmarks/loops.py --no-asdex --profile heat-loop   # pyinstrument profile of one problem (ours)

Problems (key: what it is):

* ``rnn-1000`` / ``rnn-10000`` — an RNN cell ``h ← tanh(h W + x_t U)`` (H = 4, D = 2) scanned over T steps,
  stacking every ``h``: the pattern is block lower triangular (``ys[t]`` depends on ``x[0..t]``, 4·T² nonzeros).
* ``heat-loop`` — explicit Euler for a 1-D heat equation with a cubic term, ``u ← u + dt·(Δu) − dt·u³``,
  n = 10,000, 200 steps of ``fori_loop``: a cyclic band of half-width 200 (4 million nonzeros).
* ``heat-unrolled`` — the same 200 steps written as a Python loop (straight-line code after tracing).
* ``cycle`` — ``x ← roll(sin(x), 1)`` for 10⁶ iterations of ``fori_loop`` (n = 1,000): the carried pattern is
  a permutation that cycles with period n, so the exact answer is one shifted diagonal.
* ``newton`` / ``newton-body`` — a ``while_loop`` Newton iteration stopped by a tolerance test (unknown trip
  count) on a 2-D five-point-stencil residual, n = 316² ≈ 10⁵; ``newton-body`` is one Newton step as
  straight-line code (the reference for "detection at most 5× the body's cost").
* ``ode-tsit5`` / ``ode-kvaerno5`` / ``ode-vmap`` / ``ode-mesolve`` — adaptive ODE solves through diffrax's
  ``diffeqsolve`` (Tsit5 on a non-stiff Lotka–Volterra chain, Kvaerno5 on stiff Robertson kinetics, a vmapped
  batch of independent Tsit5 solves) and a dynamiqs ``mesolve`` (a damped Jaynes–Cummings master equation):
  equinox's runtime checks lower to Python callbacks, so these needed ``on_unknown="conservative"`` before.

Times include tracing and lowering (a fresh wrapper per call); "first" is the first call in the process,
"warm" the best of ``--repeat`` further calls (a tool is timed once when its first call takes longer than
``--budget`` seconds).  Ratio = asdex warm / ours warm.  A tool that fails shows its error class.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from detect import _agree, machine  # noqa: E402

import stablehlo_sparsity as ss  # noqa: E402

jax.config.update("jax_enable_x64", True)


# ---------------------------------------------------------------------- problems
def rnn(H: int = 4, D: int = 2):
    W = jnp.eye(H) * 0.5 + 0.1
    U = jnp.ones((D, H)) * 0.3

    def f(xs):
        def cell(h, x):
            h = jnp.tanh(h @ W + x @ U)
            return h, h
        return jax.lax.scan(cell, jnp.zeros(H), xs)[1]
    return f


def heat_step(u, dt=0.1):
    return u + dt * (jnp.roll(u, 1) - 2.0 * u + jnp.roll(u, -1)) - dt * u ** 3


def heat_loop(steps: int):
    return lambda u: jax.lax.fori_loop(0, steps, lambda i, u: heat_step(u), u)


def heat_unrolled(steps: int):
    def f(u):
        for _ in range(steps):
            u = heat_step(u)
        return u
    return f


def cycle(trips: int):
    return lambda x: jax.lax.fori_loop(0, trips, lambda i, c: jnp.roll(jnp.sin(c), 1), x)


def _laplace_2d(u, N):
    g = u.reshape(N, N)
    p = jnp.pad(g, 1)
    return (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4.0 * g).reshape(-1)


def newton_step(v, u, N):
    """One Newton step for ``v + v³ = Δu + 1`` (pointwise in v; the residual reads a 2-D stencil of u)."""
    r = v + v ** 3 - _laplace_2d(u, N) - 1.0
    return v - r / (1.0 + 3.0 * v ** 2), jnp.max(jnp.abs(r))


def newton_loop(N: int, tol: float = 1e-10):
    def f(u):
        def body(state):
            v, _ = state
            return newton_step(v, u, N)
        return jax.lax.while_loop(lambda s: s[1] > tol, body, (jnp.zeros_like(u), jnp.inf))[0]
    return f


def newton_body(N: int):
    return lambda u: newton_step(jnp.zeros_like(u), u, N)[0]


def ode_tsit5(n_species: int = 4):
    import diffrax

    def rhs(t, y, args):  # a chain of Lotka–Volterra predators: species i eats species i-1
        prey = jnp.concatenate([jnp.ones(1), y[:-1]])
        return y * (0.5 * prey - 0.3) - 0.05 * y ** 2

    def f(y0):
        sol = diffrax.diffeqsolve(diffrax.ODETerm(rhs), diffrax.Tsit5(), 0.0, 5.0, 0.1, y0,
                                  stepsize_controller=diffrax.PIDController(rtol=1e-6, atol=1e-8), max_steps=4096)
        return sol.ys[-1]
    return f


def ode_kvaerno5():
    import diffrax

    def rhs(t, y, args):  # Robertson's stiff kinetics
        a, b, c = y[0], y[1], y[2]
        return jnp.stack([-0.04 * a + 1e4 * b * c, 0.04 * a - 1e4 * b * c - 3e7 * b ** 2, 3e7 * b ** 2])

    def f(y0):
        sol = diffrax.diffeqsolve(diffrax.ODETerm(rhs), diffrax.Kvaerno5(), 0.0, 10.0, 1e-4, y0,
                                  stepsize_controller=diffrax.PIDController(rtol=1e-6, atol=1e-8), max_steps=4096)
        return sol.ys[-1]
    return f


def ode_vmap(batch: int = 8):
    return jax.vmap(ode_tsit5(2))


def ode_mesolve(n_cavity: int = 4):
    """A damped Jaynes–Cummings model (cavity ⊗ qubit), initial density matrix → final density matrix
    (real and imaginary parts, flattened).  Excitation-number conservation makes the map sparse."""
    import dynamiqs as dq

    a = dq.tensor(dq.destroy(n_cavity), dq.eye(2))
    sm = dq.tensor(dq.eye(n_cavity), dq.sigmam())
    H = a.dag() @ sm + sm.dag() @ a
    jump = [0.3 * a]
    d = 2 * n_cavity

    def f(r):
        re, im = r[:d * d].reshape(d, d), r[d * d:].reshape(d, d)
        rho0 = (re + 1j * im).astype(jnp.complex128)
        res = dq.mesolve(H, jump, dq.asqarray(rho0, dims=(n_cavity, 2)), jnp.array([0.0, 1.0]), progress_meter=False)
        rho = res.states[-1].to_jax()
        return jnp.concatenate([rho.real.reshape(-1), rho.imag.reshape(-1)])
    return f, 2 * d * d


def problems(quick: bool):
    T = (200, 1_000) if quick else (1_000, 10_000)
    for t in T:
        yield f"rnn-{t}", f"RNN scan, H=4, D=2, {t:,} steps", rnn(), jnp.ones((t, 2))
    n, steps = (2_000, 100) if quick else (10_000, 200)
    yield "heat-loop", f"explicit Euler, heat + cubic, n={n:,}, {steps} steps (fori_loop)", heat_loop(steps), jnp.ones(n)
    yield "heat-unrolled", f"the same, {steps} steps unrolled by hand", heat_unrolled(steps), jnp.ones(n)
    trips = 10_000 if quick else 1_000_000
    yield "cycle", f"x ← roll(sin(x), 1), n=1,000, {trips:,} iterations (fori_loop)", cycle(trips), jnp.ones(1000) * 0.5
    N = 100 if quick else 316
    yield "newton-body", f"one Newton step, 2-D stencil, n={N * N:,} (straight-line)", newton_body(N), jnp.ones(N * N)
    yield "newton", f"Newton while_loop with a tolerance, 2-D stencil, n={N * N:,}", newton_loop(N), jnp.ones(N * N)
    yield "ode-tsit5", "diffrax Tsit5, Lotka–Volterra chain, 4 species", ode_tsit5(4), jnp.ones(4)
    yield "ode-kvaerno5", "diffrax Kvaerno5, Robertson (stiff), 3 species", ode_kvaerno5(), jnp.array([1.0, 0.0, 0.0])
    yield "ode-vmap", "vmap of 8 independent Tsit5 solves, 2 unknowns each", ode_vmap(8), jnp.ones((8, 2))
    try:
        f, n = ode_mesolve(4)
        r0 = np.zeros(n)
        r0[0] = 1.0
        yield "ode-mesolve", "dynamiqs mesolve, damped Jaynes–Cummings, 8×8 density matrix", f, jnp.asarray(r0)
    except ImportError:
        pass


# ---------------------------------------------------------------------- timing
class _Timeout(Exception):
    pass


def _time(fn, repeat: int, budget: float):
    """First call, then the best of ``repeat`` more (wall and process time); stop early past ``budget``."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    first, first_cpu = time.perf_counter() - t0, time.process_time() - c0
    best, best_cpu = first, first_cpu
    if first > budget:
        return out, first, best, best_cpu
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        if wall < best:
            best, best_cpu = wall, cpu
    return out, first, best, best_cpu


def _address_space_cap():
    """A soft address-space limit for one tool's call: what the process maps now plus 80 % of the memory
    available, so a tool that outgrows the machine raises ``MemoryError`` instead of being killed by the
    kernel with the whole benchmark (asdex on the 10,000-step RNN: 4·10⁸ nonzeros as Python sets)."""
    import resource

    from stablehlo_sparsity.lattice.budget import available_memory

    with open("/proc/self/statm") as fh:
        mapped = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    return resource.RLIMIT_AS, mapped + int(0.8 * (available_memory() or 8 << 30))


def _run(tool, f, x, repeat, budget, limit, capped=False):
    """``(pattern, first, warm, cpu)`` or ``(error name, …)``; gives up after ``limit`` seconds (SIGALRM) and,
    when ``capped``, when the call needs more memory than the machine has (see :func:`_address_space_cap`)."""
    import resource
    import signal

    def alarm(*_):
        raise _Timeout

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(int(limit))
    old_limit = None
    if capped and sys.platform.startswith("linux"):
        which, cap = _address_space_cap()
        old_limit = resource.getrlimit(which)
        hard = old_limit[1]
        resource.setrlimit(which, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _time(lambda: tool(lambda v: f(v), x), repeat, budget)
    except _Timeout:
        return f"> {limit:.0f} s", None, None, None
    except Exception as e:  # a tool's refusal is a result of the benchmark
        return type(e).__name__, None, None, None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        if old_limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, old_limit)


def _fmt(t):
    return "—" if t is None else (f"{t:.3f}" if t < 10 else f"{t:.1f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated key prefixes")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--budget", type=float, default=30.0,
                    help="time a tool only once when its first call takes longer than this (s)")
    ap.add_argument("--limit", type=float, default=900.0, help="give up on a tool's call after this many seconds")
    ap.add_argument("--no-asdex", action="store_true")
    ap.add_argument("--profile", default="", help="profile our first call of this problem with pyinstrument")
    args = ap.parse_args(argv)
    asdex = None
    if not args.no_asdex:
        try:
            import asdex
        except ImportError:
            pass
    only = [s for s in args.only.split(",") if s]

    rows = []
    for key, name, f, x in problems(args.quick):
        if only and not any(key.startswith(o) for o in only):
            continue
        if args.profile == key:
            from pyinstrument import Profiler

            with Profiler() as prof, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ss.jacobian_sparsity(lambda v: f(v), x)
            print(prof.output_text(unicode=True, color=False), file=sys.stderr)
        pat, first, warm, cpu = _run(ss.jacobian_sparsity, f, x, args.repeat, args.budget, args.limit)
        row = {"key": key, "name": name, "n": x.size, "nnz": getattr(pat, "nnz", None), "ours_first": first,
               "ours": warm, "ours_cpu": cpu, "ours_err": pat if isinstance(pat, str) else None}
        if asdex is not None:
            ap_pat, a_first, a_warm, a_cpu = _run(asdex.jacobian_sparsity, f, x, args.repeat, args.budget,
                                                  args.limit, capped=True)
            row.update(asdex_first=a_first, asdex=a_warm, asdex_cpu=a_cpu,
                       asdex_err=ap_pat if isinstance(ap_pat, str) else None,
                       agree=(_agree(pat, ap_pat) if not isinstance(pat, str) and not isinstance(ap_pat, str)
                              else "—"))
        rows.append(row)
        msg = f"  {key}: ours {row['ours_err'] or _fmt(warm) + ' s'}"
        if asdex is not None:
            msg += f", asdex {row['asdex_err'] or _fmt(row['asdex']) + ' s'}"
        print(msg, file=sys.stderr, flush=True)

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"Loop benchmark — {time.strftime('%Y-%m-%d')} — {machine()} — load average {load:.1f}\n")
    hdr = "| problem | n | nnz | ours first (s) | ours warm (s) | ours CPU (s) |"
    sep = "|---|---:|---:|---:|---:|---:|"
    if asdex is not None:
        hdr += " asdex first (s) | asdex warm (s) | asdex / ours (warm) | same pattern |"
        sep += "---:|---:|---:|:---:|"
    print(hdr)
    print(sep)
    for r in rows:
        nnz = "—" if r["nnz"] is None else f"{r['nnz']:,}"
        if r["ours_err"]:
            line = f"| {r['name']} | {r['n']:,} | {nnz} | {r['ours_err']} | | |"
        else:
            line = f"| {r['name']} | {r['n']:,} | {nnz} | {_fmt(r['ours_first'])} | {_fmt(r['ours'])} | {_fmt(r['ours_cpu'])} |"
        if asdex is not None:
            if r["asdex_err"]:
                line += f" {r['asdex_err']} | | | {r['agree']} |"
            else:
                ratio = f"{r['asdex'] / r['ours']:.1f}×" if r["ours"] else "—"
                line += f" {_fmt(r['asdex_first'])} | {_fmt(r['asdex'])} | {ratio} | {r['agree']} |"
        print(line)
    body = {r["key"]: r for r in rows}
    if "newton" in body and "newton-body" in body and body["newton"]["ours"] and body["newton-body"]["ours"]:
        print(f"\nNewton loop / one Newton step (ours, warm): "
              f"{body['newton']['ours'] / body['newton-body']['ours']:.1f}×")
    if "heat-loop" in body and "heat-unrolled" in body and body["heat-loop"]["ours"] and body["heat-unrolled"]["ours"]:
        print(f"heat: unrolled / loop (ours, warm): {body['heat-unrolled']['ours'] / body['heat-loop']['ours']:.2f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main())
