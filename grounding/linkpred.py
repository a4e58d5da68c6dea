"""Deprecated location: ``grounding.linkpred`` moved to :mod:`grounding.learn.linkpred`.

Importing this module warns and returns :mod:`grounding.learn.linkpred` itself (every name, public
or private, keeps working for one release).
"""

import sys
import warnings

from grounding.learn import linkpred as _moved

warnings.warn(
    "grounding.linkpred is deprecated and will be removed in the next release; "
    "import grounding.learn.linkpred (or grounding.learn) instead",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _moved
