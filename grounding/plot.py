r"""Figures of grounded reasoning in one style (matplotlib): the posterior of a
:class:`~grounding.GroundingResult` with each candidate's evidence status, the Thm. 3
total-variation bounds against :math:`\lambda\omega`, risk-coverage curves of a selective rule
(Prop. 9 / Eq. (22)), and an evidence subgraph with the supporting walks and their
:math:`\nu^*` weights (Prop. 2) drawn on it.

Every function draws on a given ``ax`` (or a new figure), labels its axes, and returns the
``Axes``; the numbers drawn are the artists' data (``ax.patches``, ``ax.lines``), so a figure
can be checked without comparing pixels. :func:`style` is the package's ``rcParams``;
:func:`figure_data` reads every panel's drawn numbers back out of a figure (the experiments
write them next to each PNG), and :func:`mark_quick` labels a figure drawn from a small run.
"""

from __future__ import annotations

import contextlib
import textwrap
from collections.abc import Iterator, Mapping, Sequence

import matplotlib
import matplotlib.collections
import matplotlib.container
import matplotlib.pyplot as plt
import networkx as nx
import numpy as np
from jax.typing import ArrayLike

from grounding._checks import check_int
from grounding.bounds import tv_bound, tv_bound_sharp
from grounding.evidence import EvidenceStatus
from grounding.graph import INVERSE_SUFFIX, TypedGraph, inverse_relation
from grounding.result import GroundingResult

__all__ = [
    "style",
    "posterior_bars",
    "tv_bound_curves",
    "risk_coverage",
    "evidence_paths",
    "relation_text",
    "mark_quick",
    "figure_data",
]

#: The package's figure style (readable at print size, a light grid, no top/right spines).
STYLE = {
    "figure.dpi": 110,
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "legend.frameon": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
}

#: One color per evidence status (Sec. 3.3), used wherever a status is drawn.
STATUS_COLORS = {
    EvidenceStatus.SUPPORTED: "#2b8a3e",
    EvidenceStatus.CONTRADICTED: "#c92a2a",
    EvidenceStatus.UNSUPPORTED: "#868e96",
    EvidenceStatus.OUT_OF_SCHEMA: "#e67700",
}


@contextlib.contextmanager
def style() -> Iterator[None]:
    """``with grounding.plot.style(): ...`` draws in :data:`STYLE`."""
    with plt.rc_context(STYLE):
        yield


def _axes(ax):
    if ax is not None:
        return ax
    with style():
        return plt.subplots(figsize=(6.0, 3.6), layout="constrained")[1]


def posterior_bars(
    result: GroundingResult,
    ax: plt.Axes | None = None,
    *,
    max_candidates: int = 12,
    labels: Sequence[str] | None = None,
):
    """Prior, soft posterior (Eq. (7)) and, when computed, hard posterior (Eq. (6)) of each
    candidate as grouped bars; each candidate's label (``labels``, one per candidate, default
    its name) carries its evidence status, colored as :data:`STATUS_COLORS`. Shows the
    ``max_candidates`` (a positive int) of largest soft posterior."""
    check_int(max_candidates, "max_candidates")
    ax = _axes(ax)
    names = list(result.names if labels is None else labels)
    if len(names) != len(result.names):
        raise ValueError(f"labels must name the {len(result.names)} candidates, got {len(names)}")
    post = np.exp(np.asarray(result.log_posterior, float))
    order = np.argsort(-post, kind="stable")[:max_candidates]
    series = [("prior", np.exp(np.asarray(result.log_prior, float)), "#adb5bd")]
    series.append(("soft posterior", post, "#1c7ed6"))
    if result.hard_log_posterior is not None:
        series.append(
            ("hard posterior", np.exp(np.asarray(result.hard_log_posterior, float)), "#212529")
        )
    width = 0.8 / len(series)
    x = np.arange(len(order))
    for j, (label, values, color) in enumerate(series):
        ax.bar(
            x + (j - (len(series) - 1) / 2) * width, values[order], width, label=label, color=color
        )
    statuses = [EvidenceStatus(int(s)) for s in np.asarray(result.status)[order]]
    ax.set_xticks(x, [f"{names[i]}\n{s}" for i, s in zip(order, statuses)], fontsize=8)
    for tick, s in zip(ax.get_xticklabels(), statuses):
        tick.set_color(STATUS_COLORS[s])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("probability")
    ax.set_title(result.question or "grounded posterior")
    ax.legend(loc="upper right")
    return ax


def tv_bound_curves(
    lam_omega: ArrayLike,
    ax: plt.Axes | None = None,
    *,
    measured: tuple[ArrayLike, ArrayLike] | None = None,
):
    r"""The Thm. 3 bounds on :math:`\mathrm{TV}(P^R_\lambda, P^{R'}_\lambda)` against
    :math:`\lambda\omega` (``lam_omega`` ``[n]``, sorted): the paper's
    :math:`\tanh(\lambda\omega/2)` and the sharp :math:`\tanh(\lambda\omega/4)`;
    ``measured = (lam_omega, tv)`` adds observed distances as points."""
    ax = _axes(ax)
    x = np.asarray(lam_omega, float)
    if x.ndim != 1 or not np.all(np.diff(x) >= 0) or np.any(x < 0):
        raise ValueError("lam_omega must be a sorted 1-D array of values >= 0")
    ax.plot(x, np.asarray(tv_bound(x, 1.0)), label=r"paper: $\tanh(\lambda\omega/2)$")
    ax.plot(x, np.asarray(tv_bound_sharp(x, 1.0)), "--", label=r"sharp: $\tanh(\lambda\omega/4)$")
    if measured is not None:
        mx, my = (np.asarray(a, float) for a in measured)
        if mx.shape != my.shape:
            raise ValueError(f"measured: {mx.shape} lam*omega values but {my.shape} TVs")
        ax.scatter(mx, my, s=8, alpha=0.35, lw=0, color="#212529", label="measured TV", zorder=3,
                   rasterized=mx.size > 500)  # fmt: skip
    ax.set_xlabel(r"$\lambda\,\omega$ (strength $\times$ energy oscillation)")
    ax.set_ylabel("total variation")
    ax.set_ylim(0, 1.02)
    ax.set_title("Thm. 3: stability of the grounded posterior")
    for handle in ax.legend(loc="lower right").legend_handles:
        handle.set_alpha(1.0)  # the translucent points' marker, legible in the legend
    return ax


def risk_coverage(
    scores: ArrayLike, correct: ArrayLike, ax: plt.Axes | None = None, *, label: str | None = None
):
    """Selective risk (error rate among answered questions) against coverage when the
    questions of highest ``score`` are answered first (the selective rule of Eq. (22) swept
    over its threshold). Ties in score enter together. Returns the ``Axes``; the curve is
    ``ax.lines[-1]``."""
    ax = _axes(ax)
    s, c = np.asarray(scores, float), np.asarray(correct)
    if s.ndim != 1 or s.shape != c.shape or s.size == 0:
        raise ValueError(
            f"scores and correct must be non-empty 1-D of one length, got {s.shape}, {c.shape}"
        )
    if np.isnan(s).any() or not np.isin(c, (0, 1)).all():
        raise ValueError("scores must not be NaN and correct must hold 0/1 values")
    order = np.argsort(-s, kind="stable")
    errors = np.cumsum(1 - c[order].astype(float))
    last = np.r_[s[order][1:] != s[order][:-1], True]  # the end of each block of tied scores
    n = np.arange(1, s.size + 1)[last]
    ax.plot(n / s.size, errors[last] / n, marker=".", label=label)
    ax.set_xlabel("coverage (share of questions answered)")
    ax.set_ylabel("selective risk (error among answered)")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(bottom=0)
    ax.set_title("risk-coverage")
    if label is not None:
        ax.legend(loc="upper left")
    return ax


def _candidate(result: GroundingResult, candidate: int | str | None) -> int:
    """The index of ``candidate``: ``None`` (the posterior's best), an index, or a name."""
    n = len(result.names)
    if candidate is None:
        return int(result.best)
    if isinstance(candidate, str):
        if candidate not in result.names:
            raise ValueError(f"candidate {candidate!r} is not one of the result's {n} candidates")
        return result.names.index(candidate)
    candidate = check_int(candidate, "candidate (an index, when not a candidate name)", 0)
    if not candidate < n:
        raise ValueError(f"candidate must lie in [0, {n}), got {candidate}")
    return int(candidate)


def _check_graph(graph: TypedGraph, result: GroundingResult, c: int, walks) -> None:
    """ValueError unless every reported walk of candidate ``c`` is a walk of ``graph``: its
    edge indices exist, join its reported nodes, and name the triples the result reported
    (a graph other than the one grounded on would draw other edges)."""
    p, n_edges = result.paths, graph.n_edges
    head, rel, tail = (np.asarray(a) for a in (graph.head, graph.relation, graph.tail))
    reported = result.triples[c] if len(result.triples) > c else ()
    for k, (w, _, _) in walks:
        where = f"walk {k + 1} of candidate {result.names[c]!r}"
        outside = w[(w < 0) | (w >= n_edges)]
        if outside.size:
            raise ValueError(f"{_OTHER_GRAPH}: {where} uses edge {int(outside[0])}, the graph "
                             f"has {n_edges} edges")  # fmt: skip
        nodes = p.nodes[c, k, : len(w) + 1]
        if np.any(head[w] != nodes[:-1]) or np.any(tail[w] != nodes[1:]):
            raise ValueError(f"{_OTHER_GRAPH}: {where} does not join its reported nodes here")
        names = tuple((graph.entities[head[e]], graph.relations[rel[e]],
                       graph.entities[tail[e]]) for e in w)  # fmt: skip
        if k < len(reported) and names != tuple(reported[k]):
            raise ValueError(f"{_OTHER_GRAPH}: {where} reads {names} here, the result reported "
                             f"{tuple(reported[k])}")  # fmt: skip


_OTHER_GRAPH = "graph is not the one the result was grounded on"


def evidence_paths(
    graph: TypedGraph,
    result: GroundingResult,
    ax: plt.Axes | None = None,
    *,
    candidate: int | str | None = None,
    seed: int = 0,
    node_labels: Mapping[str, str] | None = None,
    relation_labels: Mapping[str, str] | None = None,
):
    r"""The evidence subgraph spanned by one candidate's reported supporting walks (default:
    the posterior's best; ``candidate``: an index or a name), edges labeled with their
    relation, and each walk's edges drawn with width proportional to its :math:`\nu^*`
    weight (Prop. 2; the weight is in the legend). Needs ``ground(..., n_paths >= 1)`` and
    the ``graph`` grounded on (another graph is a ValueError: its edges would be wrong).

    ``node_labels`` (entity name -> text) and ``relation_labels`` (relation name -> text)
    name what is drawn; a name without a label is drawn as itself, and an inverse relation
    ``r^-1`` whose ``r`` has a label reads ``"<label of r> (inverse)"``
    (:func:`relation_text`). Long labels wrap."""
    if result.paths is None:
        raise ValueError("the result has no supporting paths: ground with n_paths >= 1")
    c = _candidate(result, candidate)
    p = result.paths
    slots = [
        (k, (p.edges[c, k, : p.length[c, k]], float(p.weight[c, k]), float(p.cost[c, k])))
        for k in range(p.length.shape[1])
        if p.length[c, k] > 0
    ]
    _check_graph(graph, result, c, slots)
    walks = [w for _, w in slots]
    ax = _axes(ax)
    nodes = dict(node_labels or {})
    ax.set_title(f"supporting walks of {nodes.get(result.names[c], result.names[c])}")
    ax.set_axis_off()
    if not walks:
        ax.text(0.5, 0.5, "no supporting walk", ha="center", va="center", transform=ax.transAxes)
        return ax
    edges = sorted({int(e) for w, _, _ in walks for e in w})
    head, rel, tail = (np.asarray(a) for a in (graph.head, graph.relation, graph.tail))
    sub = nx.MultiDiGraph()
    for e in edges:
        sub.add_edge(
            graph.entities[head[e]],
            graph.entities[tail[e]],
            key=e,
            relation=graph.relations[rel[e]],
        )
    pos = nx.spring_layout(nx.Graph(sub), seed=seed)
    nx.draw_networkx_nodes(
        sub, pos, ax=ax, node_color="#e7f5ff", edgecolors="#1c7ed6", node_size=600
    )
    for n, xy in pos.items():  # each label under its node, which stays visible
        ax.annotate(textwrap.fill(nodes.get(n, n), 22), xy, xytext=(0, -13), ha="center",
                    va="top", textcoords="offset points", fontsize=8,
                    bbox={"alpha": 0.8, "color": "white", "lw": 0})  # fmt: skip
    colors = plt.get_cmap("tab10")
    for k, (w, weight, cost) in enumerate(walks):
        pairs = [(graph.entities[head[e]], graph.entities[tail[e]]) for e in w]
        nx.draw_networkx_edges(sub, pos, edgelist=pairs, ax=ax, width=1 + 6 * weight, edge_color=[colors(k)],
                               arrows=True, arrowsize=14, connectionstyle=f"arc3,rad={0.08 * k}",
                               node_size=600)  # fmt: skip
        ax.plot([], [], color=colors(k), linewidth=1 + 6 * weight,
                label=f"walk {k + 1}: E={cost:.3g}, nu*={weight:.3f}")  # fmt: skip
    labels = {(u, v): textwrap.fill(relation_text(d["relation"], relation_labels or {}), 28)
              for u, v, d in sub.edges(data=True)}  # fmt: skip
    nx.draw_networkx_edge_labels(nx.DiGraph(sub), pos, edge_labels=labels, ax=ax, font_size=7,
                                 bbox={"alpha": 0.7, "color": "white", "lw": 0})  # fmt: skip
    ax.margins(0.12, 0.18)  # room for the labels under the outer nodes
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, 0.0), fontsize=8)  # below the drawing
    return ax


def relation_text(name: str, labels: Mapping[str, str]) -> str:
    """How relation ``name`` reads in a figure: its label in ``labels``; for an inverse
    relation ``r^-1`` without a label of its own, ``"<label of r> (inverse)"``; else the
    name itself.

    Example:
        >>> relation_text("P37^-1", {"P37": "official language"})
        'official language (inverse)'
    """
    if name in labels:
        return labels[name]
    base = inverse_relation(name)
    if name.endswith(INVERSE_SUFFIX) and base in labels:
        return f"{labels[base]} (inverse)"
    return name


def mark_quick(
    fig: plt.Figure, note: str = "quick run: small sample, not the paper-quality figure"
) -> None:
    """Write ``note`` below the figure's bottom-right corner (for figures of a reduced run;
    saving with ``bbox_inches="tight"`` keeps it)."""
    fig.text(1.0, -0.01, note, ha="right", va="top", fontsize=9, color="#c92a2a",
             style="italic")  # fmt: skip


def _floats(values) -> list:
    """JSON-ready floats (NaN and masked values become ``None``); categorical data (the
    strings of a categorical axis) stays strings."""
    try:
        a = np.ma.filled(np.ma.masked_invalid(np.asarray(values, dtype=float)), np.nan).ravel()
    except ValueError:
        return [str(v) for v in np.asarray(values).ravel()]
    return [None if np.isnan(v) else float(v) for v in a]


def figure_data(fig: plt.Figure) -> list[dict]:
    """Every panel's drawn numbers, read back from the artists: per axes its title, axis
    labels and scales, and one entry per labeled or unlabeled series: ``line`` (``x``,
    ``y``; ``x_axes_fraction`` when x is in axes coordinates, as for ``axhline``),
    ``scatter`` (``x``, ``y``) and ``bar`` (``x`` centers, ``height``, the tick labels).
    Panels drawn with the axis off (graph drawings) are listed with their title only.

    This is what the experiments write to ``<figure>.panels.json``: the numbers behind each
    panel, exactly as plotted."""
    panels = []
    for ax in fig.axes:
        panel = {"title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel()}
        if not ax.axison:
            panels.append(panel | {"series": []})
            continue
        panel |= {"xscale": ax.get_xscale(), "yscale": ax.get_yscale()}
        series = []
        for c in ax.containers:
            if isinstance(c, matplotlib.container.BarContainer):
                series.append({
                    "kind": "bar",
                    "label": c.get_label(),
                    "x": _floats([p.get_x() + p.get_width() / 2 for p in c.patches]),
                    "height": _floats([p.get_height() for p in c.patches]),
                })  # fmt: skip
        ticks = [t.get_text() for t in ax.get_xticklabels()]
        if series and any(ticks):
            panel["xticklabels"] = ticks
        for line in ax.lines:
            entry = {"kind": "line", "label": line.get_label()}
            entry |= {"x": _floats(line.get_xdata()), "y": _floats(line.get_ydata())}
            if line.get_transform() == ax.get_yaxis_transform():
                entry["x_axes_fraction"] = True
            series.append(entry)
        for col in ax.collections:
            if isinstance(col, matplotlib.collections.PathCollection):
                xy = np.asarray(col.get_offsets(), float).reshape(-1, 2)
                series.append({"kind": "scatter", "label": col.get_label(),
                               "x": _floats(xy[:, 0]), "y": _floats(xy[:, 1])})  # fmt: skip
        panel["series"] = series
        panels.append(panel)
    return panels
