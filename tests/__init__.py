"""The test suite, grouped as the package is (``core/``, ``solver/``, ``retrieval/``, ...;
``contracts/`` holds the checks that span the package). Every folder is a package, so test
files of one name in two folders do not collide.

This folder goes on ``sys.path`` so that the shared helpers beside this file (``_tol``,
``_stub``, ``_batches``, ``_retrieval``, ``_experiment_runs``, ``_multiprocess_worker``) import by their bare
names from any folder; it goes last, so that a test folder (``datasets/``, ``language/``, ...) never
shadows an installed package of the same name.
"""

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.append(_HERE)
