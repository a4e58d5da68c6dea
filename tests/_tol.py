"""Tolerances, stated once. Never loosened to make a test pass.

- ``F64``: theorem identities in float64 (exact algebra up to rounding).
- ``F32``: agreement of a float32 evaluation with the float64 one, relative to the scale
  of the float64 value (float32 has ~7 significant digits; log-space sums of up to a few
  hundred terms lose at most ~2 more).
- ``TIGHT``: a bound counts as attained by a constructed instance when within this
  relative distance (``THEORY.md``: "within 1e-3 relative").
"""

F64 = dict(rtol=1e-9, atol=1e-10)
F32 = dict(rtol=2e-4, atol=2e-5)
TIGHT = 1e-3
