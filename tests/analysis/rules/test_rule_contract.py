"""The rule contract, checked on the source: rules reach the analysis only through ``RuleContext``, and nothing
outside the interpreter touches its private state (frames, call stack, caches) or its warning list."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import stablehlo_sparsity
from stablehlo_sparsity.analysis.rules.registry import RuleContext

PACKAGE = Path(stablehlo_sparsity.__file__).parent
PRIVATE_STATE = {"_scope", "_frames", "_call_stack", "_call_cache", "_memos"}


def _contract() -> set[str]:
    names = set(getattr(RuleContext, "__annotations__", {}))
    names |= {n for n, _ in inspect.getmembers(RuleContext) if not n.startswith("_")}
    return names


def _violations(path: Path, contract: set[str]) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    rel = path.relative_to(PACKAGE.parent)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in PRIVATE_STATE \
                and not (isinstance(node.value, ast.Name) and node.value.id == "self"):  # a class's own state
            out.append(f"{rel}:{node.lineno}: reads the interpreter's .{node.attr}")
        if isinstance(node, ast.Delete):
            for t in node.targets:
                if "warned" in ast.unparse(t):
                    out.append(f"{rel}:{node.lineno}: deletes from the interpreter's warnings")
        if path.parent.name == "rules":
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "ctx" \
                    and node.attr not in contract:
                out.append(f"{rel}:{node.lineno}: ctx.{node.attr} is not part of RuleContext")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in ("getattr", "hasattr", "setattr") and node.args \
                    and isinstance(node.args[0], ast.Name) and node.args[0].id == "ctx":
                out.append(f"{rel}:{node.lineno}: {node.func.id}(ctx, ...) reaches around RuleContext")
    return out


def test_nothing_outside_the_interpreter_touches_its_private_state():
    contract = _contract()
    files = [p for p in PACKAGE.rglob("*.py") if p.name != "interpreter.py"]
    assert len(files) > 40
    problems = [v for p in files for v in _violations(p, contract)]
    assert not problems, "\n".join(problems)


def test_the_lint_catches_a_rule_reaching_into_the_interpreter(tmp_path):
    rules = tmp_path / "stablehlo_sparsity" / "rules"
    rules.mkdir(parents=True)
    bad = rules / "bad.py"
    bad.write_text("def rule(ctx, op, args):\n    ctx._frames.clear()\n    del ctx.warned[3:]\n"
                   "    return getattr(ctx, 'observer', None) or ctx.observer\n")
    global PACKAGE
    saved, PACKAGE = PACKAGE, tmp_path / "stablehlo_sparsity"
    try:
        found = _violations(bad, _contract())
    finally:
        PACKAGE = saved
    assert {f.split(": ", 1)[1] for f in found} >= {"reads the interpreter's ._frames", "deletes from the interpreter's warnings", "getattr(ctx, ...) reaches around RuleContext", "ctx.observer is not part of RuleContext"}, found
