"""Where the suite's files are, wherever a test module sits."""

from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
TESTS = SUPPORT.parent
REPO = TESTS.parent
HOSTILE = SUPPORT / "hostile"
INJECTION_INPUTS = SUPPORT / "injection_inputs"
XLA_CRASHES = SUPPORT / "xla_crashes"
PICKLES = SUPPORT / "pickles"
