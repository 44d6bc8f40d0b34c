# lit configuration for stablehlo-sparsity-opt tests (StableHLO-style FileCheck tests).
#
# Run with:  lit -q lit_tests      (the lit from the same environment as the package)
#
# Tools are looked up next to the running Python first (the virtualenv's bin directory, where pip installs
# the `stablehlo-sparsity-opt` console script and `filecheck`), then on PATH.  Tests run in lit's internal
# shell (`not`, pipes and `2>&1` are built in; lit 23 rejects `execute_external=True`).

import os
import shutil
import sys

import lit.formats

config.name = "stablehlo_sparsity"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".py"]
config.excludes = ["lit.cfg.py", "Inputs", "__pycache__"]
config.test_source_root = os.path.dirname(__file__)

bin_dir = os.path.dirname(sys.executable)
path = os.pathsep.join([bin_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])
config.environment["PATH"] = path
for tool in ("stablehlo-sparsity-opt", "filecheck"):
    if shutil.which(tool, path=path) is None:
        lit_config.fatal(f"cannot find '{tool}' next to {sys.executable} or on PATH; "
                         "install the package with its test extra: pip install -e '.[test]'")

# StableHLO's tests set this; the Python filecheck ignores the variable, so it is also passed as a flag
# through the substitution below (same behaviour with LLVM's FileCheck and the Python port).
config.environment["FILECHECK_OPTS"] = "-enable-var-scope"
config.substitutions.append(("%PYTHON", sys.executable))
config.substitutions.append((r"\| *filecheck\b", "| filecheck --enable-var-scope"))
# Python-driven tests import the package from the same environment; keep JAX quiet and on the CPU.
for var in ("HOME", "TMPDIR", "PYTHONPATH"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
config.environment["JAX_PLATFORMS"] = "cpu"
config.environment["TF_CPP_MIN_LOG_LEVEL"] = "3"
