r"""Prop. 6: hard conditioning as the infinite-penalty limit of soft grounding.

With the truncated energy :math:`E_M = M\,\mathbf 1\{\rho\notin S_R\}` the soft posterior
:math:`P^R_{\lambda,M}` tends to the hard posterior :math:`P_0(\cdot\mid S_R)` as
:math:`\lambda M\to\infty`, and the distance is exactly
:math:`\mathrm{TV} = u/(1+u)`, :math:`u = \frac{P_0(S_R^c)}{P_0(S_R)}e^{-\lambda M}`
(:func:`grounding.bounds.hard_limit_tv`). We measure the TV (:func:`grounding.tv_distance` between
:func:`grounding.gibbs_log_posterior` and :func:`grounding.hard_log_posterior`) over a
:math:`\lambda M` grid, with two splits of the same product (:math:`\lambda = 0.5` and
:math:`\lambda = 2`: only :math:`\lambda M` matters), for random instances and for the Lou Seal
candidates: (a) in the observed state :math:`R` with :math:`S_R = \{E_R\le\kappa\}` (the
not-contradicted candidates), (b) with :math:`W_1` fully observed and
:math:`S_R = \{E_R\le\epsilon_s\}` (the supported route only).

Outputs: ``prop6_soft_to_hard.png``, ``.csv`` (TV per instance and lambda*M), ``.json``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from experiments._io import float64, parse_args, plt, save_figure, styled, write_csv, write_json
from grounding import gibbs_log_posterior, hard_log_posterior, tv_distance
from grounding.bounds import hard_limit_tv
from grounding.datasets import lou_seal_evidence
from grounding.examples import lou_seal_example

NAME = "prop6_soft_to_hard"
#: The two Lou Seal settings as drawn (kappa: the slack of a missing edge; eps_s: the support
#: threshold, so S_R = {E <= eps_s} keeps only the supported route).
LOU_SEAL_LABELS = (
    "Lou Seal in observed $R$, $S_R=\\{E_R\\leq\\kappa\\}$ (slack $\\kappa$: not contradicted)",
    "Lou Seal, $W_1$ observed, $S_R=\\{E_R\\leq\\epsilon_s\\}$ (supported only)",
)
SEED = 6
LAMBDAS = (0.5, 2.0)


@functools.cache
def _measure():
    """Compiled once: measured TV and the exact rate on a [instance, lambda*M] grid."""

    def measure(log_prior, feasible, lam_m, lam):
        # log_prior, feasible: [N, n]; lam_m: [K]; lam: scalar. Energy E_M: [N, K, n].
        m = lam_m / lam
        e_m = jnp.where(feasible[:, None, :], 0.0, m[None, :, None])  # truncated energy
        lp = jnp.broadcast_to(log_prior[:, None, :], e_m.shape)  # one prior per grid point
        soft = gibbs_log_posterior(lp, e_m, lam)  # Eq. (7) with E_M
        hard = hard_log_posterior(log_prior, jnp.where(feasible, 0.0, 1.0), 0.0)  # Eq. (6)
        tv = tv_distance(soft, jnp.broadcast_to(hard[:, None, :], soft.shape))
        exact = hard_limit_tv(log_prior[:, None, :], feasible[:, None, :], lam_m[None, :])
        return tv, exact

    return jax.jit(measure)


def _random(rng: np.random.Generator, n_inst: int, n: int):
    conc = rng.choice([0.3, 1.0, 3.0], size=(n_inst, 1))
    w = rng.gamma(conc, size=(n_inst, n)) + 1e-12
    log_prior = np.log(w / w.sum(axis=1, keepdims=True))
    feasible = rng.random((n_inst, n)) < rng.uniform(0.1, 0.9, size=(n_inst, 1))
    feasible[np.arange(n_inst), rng.integers(0, n, n_inst)] = True  # P0(S_R) > 0
    feasible[np.all(feasible, axis=1), 0] = False  # keep S_R^c nonempty (otherwise TV = 0)
    return log_prior, feasible


def run(full: bool = False) -> dict:

    rng = np.random.default_rng(SEED)
    n_inst = 400 if full else 40
    n = 8
    lam_m = np.geomspace(1e-2, 36.0, 120 if full else 40)
    lp, feas = _random(rng, n_inst, n)

    ex = lou_seal_example()
    s_r = np.asarray(ex.grounded_R.energy) <= ex.kappa  # not contradicted in R
    g_full = ex.ground(lou_seal_evidence(ex.world_1))
    s_full = np.asarray(g_full.energy) <= ex.eps_s  # supported when W1 is fully observed
    lou_lp = np.asarray(ex.log_prior)
    lou_names = ["Lou Seal, R, S={E<=kappa}", "Lou Seal, W1 observed, S={E<=eps_s}"]
    # Pad the 5 Lou Seal candidates to n with zero-prior candidates (outside S_R, no mass).
    pad = n - len(lou_lp)
    lou_lp_pad = np.concatenate([np.stack([lou_lp, lou_lp]), np.full((2, pad), -np.inf)], axis=1)
    lou_feas = np.concatenate([np.stack([s_r, s_full]), np.zeros((2, pad), bool)], axis=1)
    all_lp = np.concatenate([lou_lp_pad, lp])
    all_feas = np.concatenate([lou_feas, feas])

    measure = _measure()
    tv = {}
    exact = None
    for lam in LAMBDAS:
        t, e = measure(all_lp, all_feas, jnp.asarray(lam_m), lam)
        tv[lam], exact = np.asarray(t), np.asarray(e)
    err = np.max([np.abs(tv[lam] - exact) for lam in LAMBDAS], axis=0)
    # Relative error only where the exact TV is well above float64 rounding of the O(1) masses
    # (tv_distance sums (p - q)_+ over all candidates, so its absolute floor is ~1e-16).
    resolved = exact > 1e-12
    rel = np.where(resolved, err / np.where(resolved, exact, 1.0), 0.0)
    diffs = np.diff(exact, axis=1)
    return dict(
        lam_m=lam_m,
        lambdas=LAMBDAS,
        names=lou_names + [f"random_{k}" for k in range(n_inst)],
        lou_seal=dict(
            candidates=ex.names, S_R_observed=s_r, S_R_fully_observed=s_full, prior=np.exp(lou_lp)
        ),
        tv=tv,
        exact=exact,
        max_abs_error=float(np.max(err)),
        max_rel_error_resolved=float(np.max(rel)),
        exact_strictly_decreasing=bool(np.all(diffs < 0)),
        measured_nonincreasing=bool(
            all(np.all(np.diff(tv[lam], axis=1) <= 1e-15) for lam in LAMBDAS)
        ),
        max_tv_at_largest=float(max(np.max(tv[lam][:, -1]) for lam in LAMBDAS)),
    )


@styled
def plot(res: dict):
    fig, axes = plt.subplots(1, 2, figsize=(12.5, 5.2), layout="constrained",
                             gridspec_kw=dict(width_ratios=[1.4, 1.0]))  # fmt: skip
    x = res["lam_m"]
    ax = axes[0]
    exact = res["exact"]
    for k in range(2, min(len(exact), 22)):
        first = k == 2
        ax.loglog(x, exact[k], color="#adb5bd", lw=0.7,
                  label="random instances: exact $u/(1+u)$" if first else None)  # fmt: skip
        ax.loglog(x[::3], res["tv"][LAMBDAS[0]][k, ::3], ".", color="#868e96", ms=3,
                  label="random instances: measured" if first else None)  # fmt: skip
    for k, color in ((0, "#1c7ed6"), (1, "#2b8a3e")):
        ax.loglog(x, exact[k], color=color, lw=2, label=LOU_SEAL_LABELS[k] + ": exact")
        for lam, mk in zip(LAMBDAS, ("o", "x"), strict=True):
            ax.loglog(x[::2], res["tv"][lam][k, ::2], mk, color=color, ms=5, mfc="none",
                      label=f"measured, $\\lambda$={lam:g}" if k == 0 else None)  # fmt: skip
    ax.set_xlabel("$\\lambda M$")
    ax.set_ylabel("TV$(P^R_{\\lambda,M},\\ P_0(\\cdot\\mid S_R))$")
    ax.set_title("Prop. 6: soft → hard as $\\lambda M\\to\\infty$ (points measured, lines exact)")
    ax.legend(loc="lower left", fontsize=8)
    ax.text(0.99, 0.98, "exact: TV $= u/(1+u)$,  $u = \\frac{P_0(S_R^c)}{P_0(S_R)}\\,e^{-\\lambda M}$",
            transform=ax.transAxes, ha="right", va="top")  # fmt: skip
    ax.set_ylim(1e-18, 1e3)  # headroom for the formula

    ax = axes[1]
    floor = 1e-20
    for lam, color, style in zip(LAMBDAS, ("#7048e8", "#e8590c"), ("-", "none"), strict=True):
        err = np.max(np.abs(res["tv"][lam] - exact), axis=0)
        ax.loglog(x, np.maximum(err, floor), color=color, ls=style, marker="o" if style == "-" else "x",
                  ms=4, mfc="none", label=f"$\\lambda$={lam:g}")  # fmt: skip
    ax.axhline(np.finfo(float).eps, color="gray", ls="--", lw=0.8, label="float64 machine epsilon")
    ax.set_xlabel("$\\lambda M$")
    ax.set_ylabel("max |measured − exact| over instances")
    ax.set_title(
        f"error, all {len(exact)} instances (max rel. error {res['max_rel_error_resolved']:.1e}\n"
        "where exact TV > 1e-12); both $\\lambda$ splits give the same points"
    )
    ax.text(0.02, 0.02, f"an error of exactly 0 is drawn at {floor:g}", transform=ax.transAxes,
            fontsize=8, color="#495057")  # fmt: skip
    ax.set_ylim(floor / 3, 1e-12)
    ax.legend(loc="upper right")
    return fig


@float64
def main(argv: Sequence[str] | None = None) -> list[Path]:
    args = parse_args(argv, __doc__.splitlines()[0])
    res = run(args.full)
    out = args.out
    rows = []
    for k, name in enumerate(res["names"]):
        for j, lm in enumerate(res["lam_m"]):
            rows.append([name, lm, res["exact"][k, j]] + [res["tv"][lam][k, j] for lam in LAMBDAS])
    summary = {k: v for k, v in res.items() if k not in ("tv", "exact", "names")}
    summary["lou_seal"] |= dict(
        exact=res["exact"][:2], measured={str(lam): res["tv"][lam][:2] for lam in LAMBDAS}
    )
    return [
        *save_figure(plot(res), out / f"{NAME}.png", quick=not args.full),
        write_csv(
            out / f"{NAME}.csv",
            ["instance", "lambda_M", "exact_tv"]
            + [f"measured_tv_lambda_{lam:g}" for lam in LAMBDAS],
            rows,
        ),
        write_json(out / f"{NAME}.json", summary),
    ]


if __name__ == "__main__":
    for p in main():
        print(p)
