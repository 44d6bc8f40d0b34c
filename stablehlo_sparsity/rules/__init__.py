"""Op rules, one op family per module.  Importing this package registers every rule."""

from . import registry  # noqa: F401
from . import elementwise, structural, calls  # noqa: F401
from . import reduction, dot_general, convolution  # noqa: F401
from . import indexing  # noqa: F401
from . import control_flow, windows, sorting  # noqa: F401
from . import custom_call, linalg, misc  # noqa: F401
from . import elementwise_trust  # noqa: F401

from .registry import DEPS_RULES, ERROR_RULES, FOLD_RULES, deps_rule, error_rule, fold_rule  # noqa: F401
