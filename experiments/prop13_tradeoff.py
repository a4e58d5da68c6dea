r"""Prop. 13 (Appendix C): the constraint-strength trade-off on the Gibbs family.

:math:`P_\lambda` minimizes :math:`F + \lambda G` with :math:`F(P) = \mathrm{KL}(P\|P_0)` and
:math:`G(P) = \mathbb E_P[E_R]` (Thm. 2), so :math:`F(\lambda)` is non-decreasing and
:math:`G(\lambda)` non-increasing in :math:`\lambda` (:func:`grounding.bounds.constraint_tradeoff`).
Shown for the Lou Seal candidates with finite slack (in the observed state :math:`R`, and with
:math:`W_1` fully observed) and for random instances, together with the MAP candidate and the
posterior mass of the correct 2014 trajectory as :math:`\lambda` grows: in :math:`R` the mass
saturates below one (the missing edge leaves the correct route tied with other unsupported
candidates at the slack :math:`\kappa`) — larger :math:`\lambda` is not monotonically better.

Outputs: ``prop13_tradeoff.png``, ``.csv`` (F, G, MAP, mass per lambda for Lou Seal), ``.json``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from experiments._io import float64, parse_args, plt, save_figure, styled, write_csv, write_json
from grounding import gibbs_log_posterior
from grounding.bounds import constraint_tradeoff
from grounding.datasets import lou_seal_evidence
from grounding.examples import lou_seal_example

NAME = "prop13_tradeoff"
SEED = 13
TOL = 1e-12


@functools.cache
def _tradeoff():
    """Compiled once: F, G and the posteriors over a lambda grid for a batch of instances."""

    def one(log_prior, energy, lams):
        F, G = constraint_tradeoff(log_prior, energy, lams)  # [L] each, Prop. 13
        post = jax.vmap(lambda lam: gibbs_log_posterior(log_prior, energy, lam))(lams)  # [L, n]
        return F, G, post

    f = jax.vmap(one, in_axes=(0, 0, None))  # over instances

    return jax.jit(f)


def run(full: bool = False) -> dict:

    rng = np.random.default_rng(SEED)
    ex = lou_seal_example()
    n = len(ex.candidates)
    lams = np.concatenate([[0.0], np.geomspace(1e-2, 1e2, 400 if full else 80)])
    n_rand = 200 if full else 30
    conc = rng.choice([0.3, 1.0, 3.0], size=(n_rand, 1))
    w = rng.gamma(conc, size=(n_rand, n)) + 1e-12
    rand_lp = np.log(w / w.sum(axis=1, keepdims=True))
    rand_e = np.minimum(rng.exponential(1.0, size=(n_rand, n)), rng.uniform(0.5, 3.0, (n_rand, 1)))

    e_full = np.asarray(ex.ground(lou_seal_evidence(ex.world_1)).energy)
    e_obs = np.asarray(ex.grounded_R.energy)
    lp = np.concatenate([np.stack([np.asarray(ex.log_prior)] * 2), rand_lp])
    energy = np.concatenate([np.stack([e_obs, e_full]), rand_e])
    F, G, post = (np.asarray(a) for a in _tradeoff()(lp, energy, jnp.asarray(lams)))
    post = np.exp(post)  # [N, L, n]; F, G: [N, L]

    dF, dG = np.diff(F, axis=1), np.diff(G, axis=1)
    i = ex.correct_index
    lou = {}
    for k, key in enumerate(("observed_R", "W1_fully_observed")):
        map_idx = np.argmax(post[k], axis=1)
        lou[key] = dict(
            energy=energy[k],
            F=F[k],
            G=G[k],
            mass_correct=post[k, :, i],
            map=[ex.names[j] for j in map_idx],
            mass_correct_limit=float(post[k, -1, i]),
        )
    switch = [
        lams[j]
        for j in range(1, len(lams))
        if lou["W1_fully_observed"]["map"][j] != lou["W1_fully_observed"]["map"][j - 1]
    ]
    return dict(
        lambdas=lams,
        candidates=ex.names,
        prior=np.exp(np.asarray(ex.log_prior)),
        prior_note=ex.prior_note,
        kappa=ex.kappa,
        lou_seal=lou,
        map_switch_lambdas_W1_fully_observed=switch,
        random=dict(F=F[2:], G=G[2:], log_prior=rand_lp, energy=rand_e),
        max_F_decrease=float(max(0.0, -np.min(dF))),
        max_G_increase=float(max(0.0, np.max(dG))),
        F_nondecreasing=bool(np.all(dF >= -TOL)),
        G_nonincreasing=bool(np.all(dG <= TOL)),
        n_instances=len(F),
    )


@styled
def plot(res: dict):
    fig = plt.figure(figsize=(15, 5.4), layout="constrained")
    grid = fig.add_gridspec(2, 3, height_ratios=[4, 1])
    lams = res["lambdas"]
    lou = res["lou_seal"]
    styles = (
        ("observed_R", "#1c7ed6", "Lou Seal in $R$ (edge missing)"),
        ("W1_fully_observed", "#2b8a3e", "Lou Seal, $W_1$ fully observed"),
    )

    ax = fig.add_subplot(grid[:, 0])
    rnd = res["random"]
    for k in range(len(rnd["F"])):
        ax.plot(rnd["F"][k], rnd["G"][k], color="#adb5bd", lw=0.6,
                label="random instances" if k == 0 else None)  # fmt: skip
    for key, color, label in styles:
        ax.plot(lou[key]["F"], lou[key]["G"], color=color, lw=2, label=label)
        ax.plot(lou[key]["F"][0], lou[key]["G"][0], "o", color=color, ms=5)
    ax.set_xlabel("$F(\\lambda)=\\mathrm{KL}(P_\\lambda\\|P_0)$ (nats)")
    ax.set_ylabel("$G(\\lambda)=\\mathbb{E}_{P_\\lambda}[E_R]$")
    ax.set_title("trade-off curves ($\\lambda = 0$ at the dot, $\\to\\infty$ along the curve)")
    ax.legend(loc="upper right")

    ax = fig.add_subplot(grid[:, 1])
    x = lams[1:]
    for (key, color, _), short in zip(styles, ("in $R$", "$W_1$ observed"), strict=True):
        ax.semilogx(x, lou[key]["F"][1:], color=color, lw=2, label=f"$F$ (KL), {short}")
        ax.semilogx(x, lou[key]["G"][1:], color=color, lw=2, ls="--", label=f"$G$, {short}")
    ax.set_xlabel("$\\lambda$")
    ax.set_ylabel("$F(\\lambda)$ (nats) and $G(\\lambda)$ (energy)")
    ax.set_title(
        "$F$ non-decreasing, $G$ non-increasing\n"
        f"(largest violations {res['max_F_decrease']:.0e}, {res['max_G_increase']:.0e})"
    )
    ax.legend(loc="center left", bbox_to_anchor=(0.0, 0.55))

    ax = fig.add_subplot(grid[0, 2])
    for key, color, label in styles:
        ax.semilogx(x, lou[key]["mass_correct"][1:], color=color, lw=2, label=label)
    ax.set_ylabel("posterior mass of\nthe correct 2014 trajectory")
    ax.set_ylim(0, 1.03)
    ax.set_title("mass on the correct trajectory and the MAP vs $\\lambda$")
    ax.legend(loc="upper left")
    ax.set_xlabel("$\\lambda$")

    strip = fig.add_subplot(grid[1, 2], sharex=ax)
    names = res["candidates"]
    drawn = set()
    for row, (key, _, _) in enumerate(styles):
        maps = lou[key]["map"][1:]
        for j, name in enumerate(names):
            sel = np.array([m == name for m in maps])
            if sel.any():
                strip.scatter(x[sel], np.full(sel.sum(), row), s=10, marker="s",
                              color=plt.cm.tab10(j), label=None if name in drawn else name.replace("_", " "))  # fmt: skip
                drawn.add(name)
    strip.set_yticks([0, 1], ["MAP in $R$", "MAP, $W_1$ obs."])
    strip.set_ylim(-0.6, 1.6)
    strip.set_xlabel("$\\lambda$")
    strip.set_ylabel("MAP")
    strip.set_title("MAP candidate", fontsize=10)
    strip.grid(False)
    strip.legend(loc="upper left", bbox_to_anchor=(1.0, 1.2), fontsize=8, title="MAP candidate")
    fig.suptitle("Prop. 13: the constraint-strength trade-off on the Gibbs family")
    return fig


@float64
def main(argv: Sequence[str] | None = None) -> list[Path]:
    args = parse_args(argv, __doc__.splitlines()[0])
    res = run(args.full)
    out = args.out
    lou = res["lou_seal"]
    rows = []
    for key in lou:
        for j, lam in enumerate(res["lambdas"]):
            rows.append(
                [
                    key,
                    lam,
                    lou[key]["F"][j],
                    lou[key]["G"][j],
                    lou[key]["map"][j],
                    lou[key]["mass_correct"][j],
                ]
            )
    return [
        *save_figure(plot(res), out / f"{NAME}.png", quick=not args.full),
        write_csv(
            out / f"{NAME}.csv",
            ["state", "lambda", "F_kl", "G_expected_energy", "map", "mass_correct_2014"],
            rows,
        ),
        write_json(out / f"{NAME}.json", res),
    ]


if __name__ == "__main__":
    for p in main():
        print(p)
