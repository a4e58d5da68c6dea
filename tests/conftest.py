"""Test configuration: Hypothesis profiles and float64 for the theorem checks.

Profiles (select with ``HYPOTHESIS_PROFILE=<name>``; ``ci`` when ``CI`` is set, else ``dev``):

- ``dev``: 50 examples per property, derandomized (the same examples on every run), no
  deadline: the README's test command passes or fails the same way on every machine and every
  run; a randomized search is opt-in.
- ``explore``: ``dev`` randomized (new examples on every run; failures are saved in
  ``.hypothesis/`` and replayed first), to look for counterexamples while developing.
- ``ci``: 50 examples per property, derandomized (reproducible), no deadline. Most of a
  property's time is compiling its first shapes, so this keeps the default suite within its
  time budget on 2 cores; the core's mutation scores (``docs/theory.md``) are measured at 20.
- ``ci-100``: ``ci`` with 100 examples per property.
- ``thorough``: 1000 examples, for the ``slow`` exhaustive runs.
- ``mutation``: 20 examples, derandomized, for mutation testing (``scripts/mutation.sh``),
  where each mutant reruns the tests that reach it and a verdict must be reproducible.
"""

from __future__ import annotations

import os

import jax
import pytest
from _stub import server  # noqa: F401  (the chat-completions stub fixture, shared)
from hypothesis import HealthCheck, settings

# Theorem checks run in float64; float32 agreement is tested explicitly with float32 inputs.
jax.config.update("jax_enable_x64", True)

settings.register_profile(
    "dev",
    max_examples=50,
    derandomize=True,
    deadline=None,  # JIT compilation makes first-call timings meaningless
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "explore",
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
for name, n in (("ci", 50), ("ci-100", 100)):
    settings.register_profile(
        name,
        max_examples=n,
        derandomize=True,
        deadline=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
settings.register_profile(
    "thorough",
    max_examples=1000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "mutation",
    max_examples=20,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture(autouse=True)
def _x64():
    """Every test runs with 64-bit JAX arrays enabled (see module docstring)."""
    assert jax.config.jax_enable_x64
    yield


#: Files holding the suite's longest module fixtures (the experiments' runs, minutes each):
#: collected first, so that under ``--dist loadfile`` (with ``--no-loadscope-reorder``, which
#: keeps this order instead of sorting files by their number of tests) a worker starts them
#: at once instead of picking one up near the end while the other worker idles.
LONG_FILES = ("test_qa_quick_runs.py", "test_qa_systems_quick_runs.py", "test_quick_runs.py")


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: item.path.name not in LONG_FILES)  # stable: False sorts first
