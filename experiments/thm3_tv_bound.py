r"""Thm. 3: posterior stability under evidence perturbation, measured against both bounds.

Random instances (priors, reference energies, perturbations, a few candidate-set sizes) are
drawn for a grid of :math:`\lambda\omega` values, where :math:`\omega = \mathrm{osc}_S(E_R -
E_{R'})`. For each we measure :math:`\mathrm{TV}(P^R_\lambda, P^{R'}_\lambda)`
(:func:`grounding.tv_distance`) and compare it with the paper's bound
:math:`\tanh(\lambda\omega/2)` (:func:`grounding.bounds.tv_bound`) and the sharp bound
:math:`\tanh(\lambda\omega/4)` (:func:`grounding.bounds.tv_bound_sharp`). Half of the perturbations
are two-level (:math:`\Delta E \in \{0, \omega\}`), the extremal family of the sharp proof.

The attaining two-candidate instance: reference energy 0, so the reference posterior equals
the prior :math:`Q`; :math:`\Delta E = (0, \omega)`; :math:`b = e^{\lambda\omega}`,
:math:`s = \sqrt b`. The TV is :math:`\tanh(\lambda\omega/4)` exactly when the mass
:math:`s/(1+s)` sits on the candidate whose energy rises (:math:`\Delta E = \omega`), i.e.
:math:`Q = (1/(1+s),\ s/(1+s))`. (With the masses the other way round,
:math:`Q = (s/(1+s), 1/(1+s))`, TV is strictly below the sharp bound; both are recorded.)

Outputs: ``thm3_tv_bound.png``, ``.csv`` (every instance), ``.json`` (summary).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from experiments._io import (
    float64,
    parse_args,
    plt,
    progress,
    save_figure,
    styled,
    write_csv,
    write_json,
)
from grounding import gibbs_log_posterior, tv_distance
from grounding.bounds import log_ratio_bound, oscillation, tv_bound, tv_bound_sharp
from grounding.plot import tv_bound_curves

NAME = "thm3_tv_bound"
SEED = 3


@functools.cache
def _measure():
    """Compiled once: TV, oscillation, both bounds and the log-ratio bound for a batch."""

    def measure(log_prior, e_ref, e_new, lam):
        p_new = gibbs_log_posterior(log_prior, e_new, lam)  # P^R_lambda, Eq. (17)
        p_ref = gibbs_log_posterior(log_prior, e_ref, lam)  # P^{R'}_lambda
        omega = oscillation(e_new, e_ref, log_prior)  # osc_S(E_R - E_R')
        tv = tv_distance(p_new, p_ref)
        on = log_prior > -jnp.inf
        log_ratio = jnp.max(jnp.where(on, jnp.abs(p_new - p_ref), 0.0), axis=-1)  # log-space inputs
        return (
            tv,
            omega,
            tv_bound(lam, omega),
            tv_bound_sharp(lam, omega),
            log_ratio,
            log_ratio_bound(lam, omega),
        )

    return jax.jit(measure)


def _instances(rng: np.random.Generator, n_inst: int, n_max: int, lo: float, hi: float):
    """Random (prior, reference energy, perturbed energy, lambda), lambda*omega log-uniform."""
    lam_omega = np.exp(rng.uniform(np.log(lo), np.log(hi), size=n_inst))
    sizes = rng.integers(2, n_max + 1, size=n_inst)
    mask = np.arange(n_max)[None, :] < sizes[:, None]
    conc = rng.choice([0.3, 1.0, 3.0], size=(n_inst, 1))
    w = rng.gamma(conc, size=(n_inst, n_max)) + 1e-12
    w = np.where(mask, w, 0.0)
    prior = w / w.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        log_prior = np.log(prior)
    e_ref = rng.exponential(1.0, size=(n_inst, n_max))
    lam = np.exp(rng.uniform(np.log(0.25), np.log(4.0), size=n_inst))
    omega = lam_omega / lam
    # Perturbation with oscillation exactly omega on the support: half continuous, half two-level.
    u = rng.uniform(size=(n_inst, n_max))
    two_level = rng.random(n_inst) < 0.5
    u = np.where(two_level[:, None], (u < 0.5).astype(float), u)
    u = np.where(mask, u, 0.5)
    lo = np.min(np.where(mask, u, np.inf), axis=1, keepdims=True)
    hi = np.max(np.where(mask, u, -np.inf), axis=1, keepdims=True)
    span = hi - lo
    degenerate = span[:, 0] <= 0  # all equal: force one candidate to each extreme
    u[degenerate, 0], u[degenerate, 1] = 0.0, 1.0
    lo = np.min(np.where(mask, u, np.inf), axis=1, keepdims=True)
    hi = np.max(np.where(mask, u, -np.inf), axis=1, keepdims=True)
    d_e = (u - lo) / (hi - lo) * omega[:, None] + rng.normal(size=(n_inst, 1))  # + a constant
    return log_prior, e_ref, e_ref + d_e, lam, two_level, sizes, lam_omega


def _attaining(lam_omega: np.ndarray, lam: float = 1.0):
    """The two-candidate instances on (and, swapped, below) the sharp curve."""
    s = np.sqrt(np.exp(lam_omega))
    omega = lam_omega / lam
    q_on = np.stack([1.0 / (1.0 + s), s / (1.0 + s)], axis=1)
    q_swapped = q_on[:, ::-1]
    e_ref = np.zeros((len(lam_omega), 2))
    e_new = np.stack([np.zeros_like(omega), omega], axis=1)
    return np.log(q_on), np.log(q_swapped), e_ref, e_new, np.full(len(lam_omega), lam)


def run(full: bool = False) -> dict:
    rng = np.random.default_rng(SEED)
    grid = np.geomspace(0.05, 12.0, 16)
    chunk, n_chunks, n_max = 500, (80 if full else 8), 8
    measure = _measure()  # one compilation: every chunk has the same shapes
    rows = []
    for _ in progress(range(n_chunks), desc="thm3: instance chunks"):
        lp, e_ref, e_new, lam, two_level, sizes, x = _instances(rng, chunk, n_max, 0.03, 14.0)
        out = [np.asarray(o) for o in measure(lp, e_ref, e_new, lam)]
        rows.append(np.column_stack([x, lam, *out, two_level, sizes]))
    data = np.concatenate(rows)
    cols = [
        "lam_omega_target",
        "lam",
        "tv",
        "omega",
        "paper_bound",
        "sharp_bound",
        "max_abs_log_ratio",
        "log_ratio_bound",
        "two_level",
        "n_candidates",
    ]
    lam_omega = data[:, 1] * data[:, 3]

    curve = np.geomspace(0.01, 14.0, 200)
    lp_on, lp_sw, e_ref, e_new, lam1 = _attaining(grid)
    on = [np.asarray(o) for o in measure(lp_on, e_ref, e_new, lam1)]
    sw = [np.asarray(o) for o in measure(lp_sw, e_ref, e_new, lam1)]

    tv, paper, sharp = data[:, 2], data[:, 4], data[:, 5]
    return dict(
        grid=grid,
        n_instances=len(data),
        columns=cols,
        data=data,
        lam_omega=lam_omega,
        max_ratio_paper=float(np.max(tv / paper)),
        max_ratio_sharp=float(np.max(tv / sharp)),
        violations_paper=int(np.sum(tv > paper + 1e-12)),
        violations_sharp=int(np.sum(tv > sharp + 1e-12)),
        max_log_ratio_over_bound=float(np.max(data[:, 6] / data[:, 7])),
        max_lam_omega_rel_error=float(np.max(np.abs(lam_omega - data[:, 0]) / data[:, 0])),
        curve=curve,
        attaining=dict(
            lam_omega=grid,
            tv=on[0],
            sharp_bound=on[3],
            paper_bound=on[2],
            max_abs_gap_to_sharp=float(np.max(np.abs(on[0] - on[3]))),
            ratio_to_paper=on[0] / on[2],
        ),
        swapped_prior=dict(tv=sw[0], max_ratio_sharp=float(np.max(sw[0] / sw[3]))),
    )


def _binned_max(x: np.ndarray, y: np.ndarray, edges: np.ndarray):
    """Per log-spaced bin of ``x``: the bin's geometric center and the largest ``y`` in it."""
    k = np.digitize(x, edges) - 1
    keep = [j for j in range(len(edges) - 1) if np.any(k == j)]
    return np.sqrt(edges[:-1] * edges[1:])[keep], np.array([np.max(y[k == j]) for j in keep])


@styled
def plot(res: dict):
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8), layout="constrained")
    ax = axes[0]
    data, x = res["data"], res["lam_omega"]
    two = data[:, 8] > 0
    c = res["curve"]
    tv_bound_curves(c, ax)  # the paper's and the sharp bound (grounding.plot)
    for sel, color, label in (
        (~two, "#868e96", "continuous random $\\Delta E$"),
        (two, "#4dabf7", "two-level $\\Delta E\\in\\{0,\\omega\\}$"),
    ):
        ax.scatter(x[sel], data[sel, 2], s=4, alpha=0.35, color=color, lw=0, label=label,
                   rasterized=True)  # fmt: skip
    at = res["attaining"]
    ax.plot(at["lam_omega"], at["tv"], "o", mfc="none", color="#e8590c", ms=6,
            label="two-candidate instance attaining the sharp bound")  # fmt: skip
    ax.set_xscale("log")
    ax.set_xlabel("$\\lambda\\,\\omega$,  $\\omega=\\mathrm{osc}_S(E_R-E_{R'})$")
    ax.set_ylabel("$\\mathrm{TV}(P^R_\\lambda, P^{R'}_\\lambda)$")
    ax.set_title(f"Thm. 3: {res['n_instances']} random instances")
    legend = ax.legend(loc="upper left")
    for handle in legend.legend_handles:  # the points' markers, visible in the legend
        if hasattr(handle, "set_sizes"):
            handle.set_sizes([25.0])
            handle.set_alpha(1.0)

    ax = axes[1]
    edges = np.geomspace(x.min(), x.max() * (1 + 1e-9), 25)
    for bound, col, color, marker in (("sharp", 5, "#212529", "o"), ("paper", 4, "#c92a2a", "s")):
        ratio = data[:, 2] / data[:, col]
        center, top = _binned_max(x, ratio, edges)
        ax.plot(center, top, marker=marker, ms=4, color=color,
                label=f"TV / {bound} bound (max {ratio.max():.4f})")  # fmt: skip
    ax.plot(at["lam_omega"], at["tv"] / at["sharp_bound"], "o", mfc="none", color="#e8590c",
            ms=6, label="attaining instance / sharp bound")  # fmt: skip
    ax.axhline(1.0, color="gray", lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_ylim(0, 1.08)
    ax.set_xlabel("$\\lambda\\,\\omega$ (24 log-spaced bins)")
    ax.set_ylabel("largest measured TV / bound in the bin")
    ax.set_title("how much of each bound is used")
    ax.legend(loc="lower right")
    return fig


@float64
def main(argv: Sequence[str] | None = None) -> list[Path]:
    args = parse_args(argv, __doc__.splitlines()[0])
    res = run(args.full)
    out = args.out
    summary = {k: v for k, v in res.items() if k not in ("data", "lam_omega", "curve", "columns")}
    return [
        *save_figure(plot(res), out / f"{NAME}.png", quick=not args.full),
        write_csv(out / f"{NAME}.csv", res["columns"], res["data"].tolist()),
        write_json(out / f"{NAME}.json", summary),
    ]


if __name__ == "__main__":
    for p in main():
        print(p)
