"""Op rules, one op family per module.  Importing this package registers every rule (the registry is in
:mod:`.registry`)."""

from . import registry  # noqa: F401
from . import elementwise, elementwise_trust, structural, calls  # noqa: F401
from . import reduction, dot_general, convolution  # noqa: F401
from . import indexing, value_ranges  # noqa: F401
from . import control_flow, windows, sorting  # noqa: F401
from . import custom_call, linalg  # noqa: F401
from . import normalization, random_numbers, chlo, dynamic_shapes, distribution, refused  # noqa: F401

from .registry import COVERAGE, DEPS_RULES, ERROR_RULES, FOLD_RULES, REFUSED, deps_rule, error_rule, fold_rule  # noqa: F401
