"""Deprecated location: ``grounding.kge`` moved to :mod:`grounding.learn.kge`.

Importing this module warns and returns :mod:`grounding.learn.kge` itself (every name, public
or private, keeps working for one release).
"""

import sys
import warnings

from grounding.learn import kge as _moved

warnings.warn(
    "grounding.kge is deprecated and will be removed in the next release; "
    "import grounding.learn.kge (or grounding.learn) instead",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _moved
