"""Fig. 2 of the paper: Lou Seal non-identifiability (Thm. 1) and finite slack (Prop. 3).

Two latent worlds, :math:`W_1` (the Giants' most recent title is the 2014 World Series) and
:math:`W_2` (it is the 2012 one), induce the same observed evidence state :math:`R` (the
championship edge is not retrieved). Any hard rule decides identically in both worlds, so the
hard rule that rejects the unsupported 2014 trajectory is wrong in :math:`W_1`
(:func:`grounding.worlds.hard_rule_requirements`). The finite-slack soft posterior keeps the
trajectory with positive mass in both worlds, labeled *unsupported* (not true), so the
decision layer routes it to renewed retrieval.

Outputs: ``fig2_two_worlds.png``, ``fig2_two_worlds.csv`` (mass of the 2014 trajectory per
world, rule and lambda), ``fig2_two_worlds.json`` (everything, incl. the Thm. 1 check).
"""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import networkx as nx
import numpy as np

from experiments._io import float64, parse_args, plt, save_figure, styled, write_csv, write_json
from grounding import gibbs_log_posterior, hard_feasible, hard_log_posterior
from grounding.datasets import lou_seal_evidence
from grounding.decision import decide
from grounding.evidence import EvidenceStatus
from grounding.examples import lou_seal_example
from grounding.worlds import hard_rule_requirements, truth

NAME = "fig2_two_worlds"
NODE_SIZE = 380
#: Edge labels sit on a translucent white box, so an edge crossing behind stays readable.
EDGE_LABEL_BOX = dict(boxstyle="round,pad=0.1", fc="white", ec="none", alpha=0.85)


def _label(name: str) -> str:
    short = name.replace("_world_series", " WS").replace("san_francisco_giants", "SF giants")
    short = short.replace("st_louis_cardinals", "STL cardinals").replace("_", " ")
    return textwrap.fill(short, 11)


def _draw_world(ax, graph, pos, title, highlight=(), hidden=(), highlight_color="tab:green"):
    g = nx.DiGraph()
    g.add_nodes_from(graph.entities)
    triples = graph.triples()
    g.add_edges_from((h, t) for h, _, t in triples)
    route = {"lou_seal", "san_francisco_giants"} | {t for _, _, t in highlight}
    colors = ["#ffd27f" if n in route else "#dde6f0" for n in g.nodes]
    nx.draw_networkx_nodes(
        g, pos, ax=ax, node_size=NODE_SIZE, node_color=colors, edgecolors="#555555", linewidths=0.5
    )
    nx.draw_networkx_labels(g, pos, ax=ax, labels={n: _label(n) for n in g.nodes}, font_size=7)
    plain = [(h, t) for h, _, t in triples if (h, _, t) not in set(highlight)]
    nx.draw_networkx_edges(
        g,
        pos,
        ax=ax,
        edgelist=plain,
        edge_color="#8a8a8a",
        width=0.7,
        arrowsize=6,
        node_size=NODE_SIZE,
    )
    nx.draw_networkx_edge_labels(
        g,
        pos,
        ax=ax,
        edge_labels={
            (h, t): r.replace("_", " ") for h, r, t in triples if (h, r, t) not in set(highlight)
        },
        font_size=6,
        font_color="#555555",
        rotate=False,
        bbox=EDGE_LABEL_BOX,
    )
    if highlight:
        hl = [(h, t) for h, _, t in highlight]
        nx.draw_networkx_edges(
            g,
            pos,
            ax=ax,
            edgelist=hl,
            edge_color=highlight_color,
            width=2.2,
            arrowsize=10,
            node_size=NODE_SIZE,
        )
        nx.draw_networkx_edge_labels(
            g,
            pos,
            ax=ax,
            edge_labels={(h, t): "most recent WS win" for h, _, t in highlight},
            font_size=7,
            font_color=highlight_color,
            rotate=False,
            bbox=EDGE_LABEL_BOX,
        )
    if hidden:
        hd = [(h, t) for h, _, t in hidden]
        g.add_edges_from(hd)
        nx.draw_networkx_edges(
            g,
            pos,
            ax=ax,
            edgelist=hd,
            edge_color="tab:red",
            width=1.2,
            style="dotted",
            arrowsize=8,
            node_size=NODE_SIZE,
        )
        nx.draw_networkx_edge_labels(
            g,
            pos,
            ax=ax,
            edge_labels={(h, t): "not retrieved: ?" for h, _, t in hidden},
            font_size=7,
            font_color="tab:red",
            rotate=False,
            bbox=EDGE_LABEL_BOX,
        )
    ax.set_title(title)
    ax.set_axis_off()


@functools.cache
def _posteriors():
    """One compiled program: soft posteriors over a lambda grid and the hard posterior, for a
    stack of evidence states (arrays are arguments, so nothing is re-jitted per state)."""

    def one(log_prior, energy, raw_energy, lams, eps):
        soft = jax.vmap(lambda lam: gibbs_log_posterior(log_prior, energy, lam))(lams)  # Eq. (7)
        hard = hard_log_posterior(log_prior, raw_energy, eps)  # Eq. (6); all -inf if undefined
        return soft, hard

    return jax.jit(jax.vmap(one, in_axes=(None, 0, 0, None, None)))


def run(full: bool = False) -> dict:
    """Compute every number behind the figure (no I/O)."""

    ex = lou_seal_example()
    lams = (
        np.array([0.5, 1.0, 2.0, 4.0, 8.0])
        if not full
        else np.array([0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0])
    )
    lam_curve = np.geomspace(0.01, 100.0, 60 if not full else 400)
    all_lams = np.concatenate([lams, [1.0], lam_curve])
    worlds = {"W1": ex.world_1, "W2": ex.world_2}
    states = {k: ex.observe(w) for k, w in worlds.items()}
    states["W1_fully_observed"] = lou_seal_evidence(ex.world_1)
    same_obs = all(
        sorted(states[k].graph.triples()) == sorted(ex.observed.triples()) for k in worlds
    )
    grounded = {k: ex.ground(s) for k, s in states.items()}
    soft, hard = _posteriors()(
        ex.log_prior,
        jnp.stack([g.energy for g in grounded.values()]),
        jnp.stack([g.raw_energy for g in grounded.values()]),
        jnp.asarray(all_lams),
        ex.eps_s,
    )
    soft, hard = np.exp(np.asarray(soft)), np.exp(np.asarray(hard))
    i = ex.correct_index
    nl = len(lams)

    per_world = {}
    for k_idx, (k, state) in enumerate(states.items()):
        g = grounded[k]
        hard_defined = bool(np.any(hard[k_idx] > 0))  # Eq. (6) needs p_theta(F_R) > 0
        post1 = np.log(soft[k_idx, nl])
        per_world[k] = dict(
            claim_true=truth(ex.world_1 if k.startswith("W1") else ex.world_2, ex.claim),
            claim_observed=state.graph.has_triple(ex.claim),
            hard_rule_decision=ex.hard_rule(state, ex.claim),
            hard_feasible=np.asarray(hard_feasible(g.raw_energy, ex.eps_s)),
            hard_posterior_defined=hard_defined,
            hard_mass=hard[k_idx],
            hard_mass_claim=float(hard[k_idx, i]),
            raw_energy=np.asarray(g.raw_energy),
            status=[EvidenceStatus(int(s)).name for s in np.asarray(g.status)],
            energy=np.asarray(g.energy),
            soft_mass=soft[k_idx, :nl],
            soft_mass_claim=soft[k_idx, :nl, i],
            soft_curve_claim=soft[k_idx, nl + 1 :, i],
            map_at_lambda_1=ex.names[int(np.argmax(post1))],
            action_at_lambda_1=decide(post1, g.status).name,
        )
    fully_observed = per_world.pop("W1_fully_observed")

    def retain_unless_contradicted(state, claim):
        return int(not state.counter_support(claim))

    thm1 = {}
    for rule_name, rule in (
        ("hard_rule_F_R", ex.hard_rule),
        ("retain_unless_contradicted", retain_unless_contradicted),
    ):
        keeps, rejects = hard_rule_requirements(rule, list(worlds.values()), ex.observe, ex.claim)
        thm1[rule_name] = dict(
            keeps_true_unobserved=keeps, rejects_false_unsupported=rejects, both=keeps and rejects
        )

    return dict(
        claim=ex.claim,
        alternative_tail=ex.alternative_tail,
        candidates=ex.names,
        prior=np.exp(np.asarray(ex.log_prior)),
        prior_note=ex.prior_note,
        kappa=ex.kappa,
        eps_s=ex.eps_s,
        lambdas=lams,
        lambda_curve=lam_curve,
        same_observation=same_obs,
        worlds=per_world,
        fully_observed_W1=fully_observed,
        thm1=thm1,
        graphs=dict(W1=ex.world_1, W2=ex.world_2, R=ex.observed),
    )


@styled
def plot(res: dict):
    ex_graphs = res["graphs"]
    claim = tuple(res["claim"])
    alt = (claim[0], claim[1], res["alternative_tail"])
    union = nx.Graph()
    for g in ex_graphs.values():
        union.add_nodes_from(g.entities)
        union.add_edges_from((h, t) for h, _, t in g.triples())
    union.add_edge(claim[0], claim[2])
    union.add_edge(alt[0], alt[2])
    # Edges at a hub are drawn longer, so their labels clear the hub's crowded neighbourhood.
    deg = dict(union.degree)
    for u, v in union.edges:
        union.edges[u, v]["length"] = 1.0 + 0.25 * max(deg[u], deg[v])
    pos = nx.kamada_kawai_layout(union, weight="length")

    fig = plt.figure(figsize=(18, 12), layout="constrained")
    grid = fig.add_gridspec(2, 6, height_ratios=[1.7, 1.0])
    axes = [fig.add_subplot(grid[0, 2 * k : 2 * k + 2]) for k in range(3)]
    _draw_world(
        axes[0],
        ex_graphs["W1"],
        pos,
        "latent world $W_1$: last title = 2014 (claim TRUE)",
        highlight=[claim],
        highlight_color="tab:green",
    )
    _draw_world(
        axes[1],
        ex_graphs["W2"],
        pos,
        "latent world $W_2$: last title = 2012 (claim FALSE)",
        highlight=[alt],
        highlight_color="tab:purple",
    )
    _draw_world(
        axes[2],
        ex_graphs["R"],
        pos,
        "observed $R = O_q(W_1) = O_q(W_2)$"
        + ("  (identical)" if res["same_observation"] else "  (DIFFER!)"),
        hidden=[claim],
    )

    # Panel: decision / mass of the 2014 trajectory per world.
    ax = fig.add_subplot(grid[1, 0:3])
    lams = res["lambdas"]
    labels = ["hard rule\n$\\mathbf{1}\\{E\\leq\\epsilon\\}$"]
    labels += [f"soft\n$\\lambda$={v:g}" for v in lams]
    width = 0.38
    x = np.arange(len(labels))
    for k, (w, color) in enumerate((("W1", "tab:green"), ("W2", "tab:purple"))):
        d = res["worlds"][w]
        vals = [d["hard_mass_claim"]] + list(d["soft_mass_claim"])
        bars = ax.bar(
            x + (k - 0.5) * width,
            vals,
            width,
            color=color,
            alpha=0.75,
            label=f"{w}: claim {'true' if d['claim_true'] else 'false'}",
        )
        for b, v in zip(bars, vals, strict=True):
            ax.text(b.get_x() + b.get_width() / 2, v + 0.01, f"{v:.2f}", ha="center", fontsize=8)
    ax.set_xticks(x, labels)
    ax.set_xlabel("grounding rule (hard: Eq. (6); soft with finite slack: Eq. (7) + Eq. (19))")
    ax.set_ylabel("posterior mass of the 2014 trajectory")
    w1 = res["worlds"]["W1"]
    ax.set_title(
        "same $R$ ⇒ same decision in both worlds:\nhard rule rejects it (wrong in $W_1$); "
        f"finite slack keeps it, labeled {w1['status'][0].lower()} → "
        f"{w1['action_at_lambda_1'].lower()}",
    )
    for k in range(2):
        ax.text(
            x[0] + (k - 0.5) * width,
            0.04,
            "rejected",
            rotation=90,
            ha="center",
            va="bottom",
            fontsize=9,
            color="tab:red",
        )
    ax.set_ylim(0, max(0.5, 1.15 * float(np.max(w1["soft_mass_claim"]))))
    ax.legend(loc="upper right")

    ax = fig.add_subplot(grid[1, 3:6])
    lc = res["lambda_curve"]
    ax.semilogx(
        lc,
        w1["soft_curve_claim"],
        color="tab:blue",
        label="soft, finite slack, in $R$ (both worlds)",
    )
    ax.semilogx(lc, np.zeros_like(lc), color="tab:red", ls="--", label="hard, in $R$ (both worlds)")
    fo = res["fully_observed_W1"]
    ax.semilogx(
        lc, fo["soft_curve_claim"], color="tab:green", alpha=0.8, label="soft, $W_1$ fully observed"
    )
    ax.semilogx(
        lc,
        np.full_like(lc, fo["hard_mass"][0]),
        color="tab:green",
        ls=":",
        label="hard, $W_1$ fully observed",
    )
    ax.set_xlabel("grounding strength $\\lambda$")
    ax.set_ylabel("posterior mass of the 2014 trajectory")
    thm = res["thm1"]
    ax.set_title(
        "Thm. 1 check (hard rule): keeps true-unobserved = "
        f"{thm['hard_rule_F_R']['keeps_true_unobserved']},\nrejects false-unsupported = "
        f"{thm['hard_rule_F_R']['rejects_false_unsupported']} (no rule can do both)",
    )
    ax.set_ylim(-0.03, 1.05)
    ax.legend(loc="center right")
    fig.suptitle(
        "Fig. 2 — Lou Seal non-identifiability: two latent worlds, one observed evidence "
        f"state (slack $\\kappa$={res['kappa']:g}; prior is a declared LLM stand-in)",
        fontsize=13,
    )
    return fig


@float64
def main(argv: Sequence[str] | None = None) -> list[Path]:
    args = parse_args(argv, __doc__.splitlines()[0])
    res = run(args.full)
    out = args.out
    rows = []
    for w, d in res["worlds"].items():
        rows.append(
            [w, d["claim_true"], "hard_rule", "", d["hard_rule_decision"], d["hard_mass_claim"]]
        )
        for lam, m in zip(res["lambdas"], d["soft_mass_claim"], strict=True):
            rows.append([w, d["claim_true"], "soft_slack", lam, 1, m])
    paths = [
        *save_figure(plot(res), out / f"{NAME}.png", quick=not args.full),
        write_csv(
            out / f"{NAME}.csv",
            ["world", "claim_true", "rule", "lambda", "retained", "mass_2014_trajectory"],
            rows,
        ),
        write_json(
            out / f"{NAME}.json",
            {k: v for k, v in res.items() if k != "graphs"}
            | {"graphs": {k: g.triples() for k, g in res["graphs"].items()}},
        ),
    ]
    return paths


if __name__ == "__main__":
    for p in main():
        print(p)
