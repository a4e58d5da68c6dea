r"""What :func:`grounding.ground` returns: :class:`GroundingResult` (a pytree), with its
:class:`Certificate` (Thm. 3) and :class:`SupportingPaths` (Prop. 2).
"""

from __future__ import annotations

import dataclasses
import unicodedata
from functools import partial
from typing import Any

import jax
import numpy as np
from jax.typing import ArrayLike

from grounding.bounds import certified_tv, stability_certificate
from grounding.decision import Action
from grounding.evidence import EvidenceStatus
from grounding.graph import Triple

__all__ = ["GroundingResult", "Certificate", "SupportingPaths"]


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Certificate:
    r"""Posterior stability under evidence perturbation (Thm. 3), for this result.

    For any other evidence state :math:`R'` with the same candidates and prior whose energies
    differ by an oscillation :math:`\omega = \mathrm{osc}_{\mathrm{supp}\,P_0}(E_R - E_{R'})`:

    - every log-ratio :math:`|\log p^R_\lambda(\rho)/p^{R'}_\lambda(\rho)| \le \lambda\omega`
      (``log_ratio``), so the best candidate stays the best while :math:`\omega <`
      ``radius`` :math:`=` ``margin`` :math:`/\lambda` (its log-odds over every other
      candidate move by at most :math:`\lambda\omega`);
    - :math:`\mathrm{TV}(p^R_\lambda, p^{R'}_\lambda) \le \tanh(\lambda\omega/2)`
      (``tv_paper``, Eq. (21)) and the sharp :math:`\tanh(\lambda\omega/4)` (``tv_sharp``,
      see :func:`grounding.bounds.tv_bound_sharp`).

    Attributes:
        lam: the grounding strength :math:`\lambda`.
        omega: the oscillation the bounds are evaluated at (declared, or the worst case over
            every evidence state: see :func:`grounding.ground`).
        log_ratio, tv_paper, tv_sharp: the bounds at ``omega``.
        margin: log-posterior margin of the best candidate over the runner-up (``inf`` when
            one candidate carries all the mass).
        radius: ``margin / lam`` (``inf`` at ``lam = 0``).
        valid: whether Thm. 3 applies (every energy on the prior's support is finite); when
            not, the bounds are vacuous (``1``) and ``radius`` is ``0``.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Thm. 3, Eq. (21).
    """

    lam: jax.Array
    omega: jax.Array
    log_ratio: jax.Array
    tv_paper: jax.Array
    tv_sharp: jax.Array
    margin: jax.Array
    radius: jax.Array
    valid: jax.Array

    @classmethod
    def build(
        cls, lam: ArrayLike, omega: ArrayLike, log_posterior: jax.Array, valid: jax.Array
    ) -> Certificate:
        """The certificate of a posterior at ``omega`` (``jit``/``vmap``-able): the Thm. 3
        arithmetic of :func:`grounding.bounds.stability_certificate`."""
        return cls(**stability_certificate(lam, omega, log_posterior, valid))

    def __repr__(self) -> str:  # Certificate(lam=4, omega=2, ..., radius=0.1733, valid=True)
        shown = ", ".join(
            f"{f.name}={_show(getattr(self, f.name))}" for f in dataclasses.fields(self)
        )
        return f"Certificate({shown})"

    def tv_at(self, omega: ArrayLike) -> tuple[jax.Array, jax.Array]:
        """``(paper, sharp)`` TV bounds for another oscillation ``omega``
        (:func:`grounding.bounds.certified_tv`)."""
        return certified_tv(self.lam, omega, self.valid)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class SupportingPaths:
    r"""The best supporting walks of the reported candidates, best first (padded arrays):
    the ``path_candidates`` of :func:`grounding.ground` with the highest posterior; the other
    candidates' slots are empty (``length == -1``).

    Attributes:
        edges: ``[C, k, L]`` edge indices into the evidence graph (``-1`` pads).
        nodes: ``[C, k, L + 1]`` node indices (``-1`` pads).
        length: ``[C, k]`` number of edges (``-1``: no walk in that slot).
        cost: ``[C, k]`` the walk's energy :math:`e_\gamma` (``+inf`` pads).
        weight: ``[C, k]`` its posterior weight :math:`\nu^*(\gamma)` among all walks of the
            candidate's family (Prop. 2; at ``tau = 0`` the limit: uniform over the walks of
            minimum energy). ``weight.sum(-1)`` is the share the reported walks carry.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.: Prop. 2.
    """

    edges: np.ndarray
    nodes: np.ndarray
    length: np.ndarray
    cost: np.ndarray
    weight: np.ndarray


_STATIC = ("question", "names", "kind", "triples", "answers")


def _json_float(x: ArrayLike) -> float | None:
    """A float for strict JSON: ``None`` (``null``) for a non-finite value (``+inf``: no walk,
    no rival candidate, an unbounded bound), since JSON has no infinity."""
    v = float(x)
    return v if np.isfinite(v) else None


def _show(x: Any) -> str:
    """A certificate field for ``repr``: a number (4 significant digits) or a bool, an array
    of them (a batch), or the kind of a traced value."""
    if isinstance(x, jax.core.Tracer):
        return type(x).__name__
    a = np.asarray(x)
    if a.ndim:
        return np.array2string(a, precision=4, separator=", ")
    return str(bool(a)) if a.dtype == bool else f"{float(a):.4g}"


#: The widest candidate name :meth:`GroundingResult.summary` prints, in terminal columns; a
#: longer name is cut there and ends in an ellipsis (:meth:`GroundingResult.to_dict` has it
#: whole).
NAME_COLUMN = 48


def _width(text: str) -> int:
    """Terminal columns ``text`` takes: two for a wide (e.g. CJK) character, none for a
    combining mark, one otherwise."""
    return sum(
        0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
        for ch in text
    )


def _cell(text: str, width: int) -> str:
    """``text`` padded with spaces to ``width`` columns, or cut to them with an ellipsis."""
    if _width(text) > width:
        out = ""
        for ch in text:
            if _width(out + ch) > width - 1:
                break
            out += ch
        text = out + "\u2026"
    return text + " " * (width - _width(text))


def _fmt(x: float | None, spec: str) -> str:
    """A :meth:`GroundingResult.to_dict` number for text (``None`` reads ``inf``)."""
    return format((np.inf if x is None else x) + 0.0, spec)  # + 0.0: no "-0.000"


@partial(
    jax.tree_util.register_dataclass,
    data_fields=[
        "log_prior",
        "raw_energy",
        "status",
        "energy",
        "log_posterior",
        "hard_log_posterior",
        "hard_abstained",
        "best",
        "action",
        "certificate",
        "paths",
    ],
    meta_fields=list(_STATIC),
)
@dataclasses.dataclass(frozen=True)
class GroundingResult:
    r"""The grounded posterior and what the evidence licenses, for one question.

    Attributes:
        log_prior: ``[C]`` the model's prior (Eq. (1)).
        raw_energy: ``[C]`` path energies: Eq. (11) at ``tau = 0``, Eq. (13) otherwise
            (``+inf``: no admissible walk; out-of-schema chains are ``+inf``).
        status: ``[C]`` :class:`~grounding.EvidenceStatus` codes (Sec. 3.3).
        energy: ``[C]`` the energy the posterior uses: slack-extended (Eq. (19)),
            contradiction-dominant (Axiom 4), plus any claim energy.
        log_posterior: ``[C]`` the soft grounded posterior (Eq. (7)).
        hard_log_posterior: ``[C]`` the hard posterior (Eq. (6)) when ``eps`` was given
            (``None`` otherwise); all ``-inf`` when it is undefined. Its feasible set
            (Eq. (5)) excludes contradicted and out-of-schema candidates.
        hard_abstained: ``True`` when Eq. (6) is undefined (:math:`p_\theta(F_R) = 0`): the
            hard rule's explicit abstention (``None`` without ``eps``).
        best: index of the posterior's best candidate (first on ties).
        action: :class:`~grounding.Action` code (Axiom 8 / Eq. (22)).
        certificate: the Thm. 3 :class:`Certificate`.
        paths: :class:`SupportingPaths` (``None`` when not requested).
        question, names, kind: the problem's question, candidate names and kind (static).
        triples: per candidate, per reported walk, its ``(head, relation, tail)`` names
            (static; empty without paths).
        answers: the entity each candidate answers (static; a claim chain's last mention,
            ``None`` when the chain leaves it open): what :meth:`answer_probabilities` sums.

    References:
        Li & Song, "Grounding LLM Reasoning under Incomplete Graph Evidence", n.d.:
            Eqs. (5)-(7), (11), (13), (19), (22); Axioms 4 and 8; Thm. 3.
    """

    log_prior: jax.Array
    raw_energy: jax.Array
    status: jax.Array
    energy: jax.Array
    log_posterior: jax.Array
    hard_log_posterior: jax.Array | None
    hard_abstained: jax.Array | None
    best: jax.Array
    action: jax.Array
    certificate: Certificate
    paths: SupportingPaths | None
    question: str = ""
    names: tuple[str, ...] = ()
    kind: str = "chain"
    triples: tuple[tuple[tuple[Triple, ...], ...], ...] = ()
    answers: tuple[str | None, ...] = ()

    @property
    def decision(self) -> Action:
        return Action(int(self.action))

    @property
    def answer(self) -> str | None:
        """The best candidate's answer entity (:attr:`answers`; a claim chain's last mention)
        when the decision is ANSWER, else ``None`` (abstention, retrieval or verification: the
        evidence does not license an answer; also ``None`` for a chain that leaves its answer
        open). The candidate's own name is :attr:`answer_name`."""
        if self.decision != Action.ANSWER:
            return None
        return self.answers[int(self.best)] if self.answers else self.names[int(self.best)]

    @property
    def answer_name(self) -> str | None:
        """The best candidate's name (e.g. ``'lou_seal->giants'`` for a claim chain) when the
        decision is ANSWER, else ``None``."""
        return self.names[int(self.best)] if self.decision == Action.ANSWER else None

    def posterior(self) -> np.ndarray:
        """``[C]`` posterior probabilities."""
        return np.exp(np.asarray(self.log_posterior, float))

    def answer_probabilities(self, which: str = "soft") -> tuple[tuple[str, ...], np.ndarray]:
        """The probability of each answer entity: the mass of the candidates that answer it
        (several claim chains, or several anchors' candidates, may reach one entity), most
        probable first (ties: first seen first). Candidates whose chain leaves the answer open
        are left out.

        Args:
            which: ``"soft"`` (Eq. (7)), ``"hard"`` (Eq. (6); all zero when it is undefined)
                or ``"prior"``.

        Returns:
            ``(answers, probabilities)``.

        Example:
            >>> import jax.numpy as jnp
            >>> from grounding import ClaimChain, GroundingProblem, TypedGraph, ground
            >>> g = TypedGraph.from_triples([("a", "r", "b"), ("c", "r", "b")], [0.9, 0.9])
            >>> p = GroundingProblem("q", [ClaimChain((x, "b"), ("r",)) for x in "ac"]
            ...                      + [ClaimChain(("a", "c"), ("r",))], jnp.log(jnp.ones(3) / 3))
            >>> names, probs = ground(p, g, lam=1.0, kappa=1.0).answer_probabilities()
            >>> names, [round(float(x), 3) for x in probs]  # b: (0.9 + 0.9) / (1.8 + e^-1)
            (('b', 'c'), [0.83, 0.17])
        """
        log_p = {
            "soft": self.log_posterior,
            "hard": self.hard_log_posterior,
            "prior": self.log_prior,
        }.get(which, ...)
        if log_p is ...:
            raise ValueError(f"which must be 'soft', 'hard' or 'prior', got {which!r}")
        if log_p is None:
            raise ValueError("no hard posterior: ground with eps set")
        if len(self.answers) != len(self.names):
            raise ValueError("this result does not name its candidates' answers")
        mass: dict[str, float] = {}
        for a, p in zip(self.answers, np.exp(np.asarray(log_p, np.float64))):
            if a is not None:
                mass[a] = mass.get(a, 0.0) + float(p)
        order = sorted(mass, key=lambda a: -mass[a])  # stable: first-seen order among ties
        return tuple(order), np.array([mass[a] for a in order])

    def to_dict(self) -> dict[str, Any]:
        """A summary in strict JSON types (floats, names, statuses, the certificate, the best
        walks): ``json.dumps(result.to_dict(), allow_nan=False)`` succeeds. Non-finite numbers
        are ``None`` (JSON ``null``): a ``raw_energy`` of ``None`` means no admissible walk
        (``+inf``), a certificate ``margin``/``radius``/``log_ratio`` of ``None`` is ``+inf``."""
        c = self.certificate
        out: dict[str, Any] = dict(
            question=self.question,
            action=self.decision.name,
            answer=self.answer,
            answer_name=self.answer_name,
            best=self.names[int(self.best)],
            candidates=[
                dict(
                    name=n,
                    prior=float(np.exp(self.log_prior[i])),
                    raw_energy=_json_float(self.raw_energy[i]),
                    status=EvidenceStatus(int(self.status[i])).name,
                    energy=_json_float(self.energy[i]),
                    posterior=float(np.exp(self.log_posterior[i])),
                    paths=[
                        dict(
                            triples=[list(t) for t in self.triples[i][j]],
                            energy=_json_float(self.paths.cost[i, j]),
                            weight=float(self.paths.weight[i, j]),
                        )
                        for j in range(len(self.triples[i]))
                    ]
                    if self.paths is not None and self.triples
                    else [],
                )
                for i, n in enumerate(self.names)
            ],
            certificate={
                f.name: (bool(v) if f.name == "valid" else _json_float(v))
                for f in dataclasses.fields(c)
                for v in [getattr(c, f.name)]
            },
        )
        if self.hard_log_posterior is not None:
            out["hard_abstained"] = bool(self.hard_abstained)
            out["hard_posterior"] = np.exp(np.asarray(self.hard_log_posterior, float)).tolist()
        return out

    def summary(self) -> str:
        """A plain-text report: the decision, each candidate (prior, the energy of its best
        supporting walk, its status, the energy the posterior uses, the posterior) with that
        walk, and what the evidence would have to change for the best candidate to change
        (:meth:`stability`); the paper's symbols are on the last line, in brackets."""
        d = self.to_dict()
        lines = [f"question: {self.question}", f"decision: {d['action']} (best: {d['best']})"]
        names = [c["name"] for c in d["candidates"]]
        width = min(max(map(_width, ["candidate", *names])), NAME_COLUMN)
        lines.append(
            f"{_cell('candidate', width)} {'prior':>7} {'walk E':>8} {'status':<13} "
            f"{'energy':>7} {'post':>7}"
        )
        for c in d["candidates"]:
            lines.append(
                f"{_cell(c['name'], width)} {c['prior']:7.3f} {_fmt(c['raw_energy'], '8.3f')} "
                f"{c['status']:<13} {_fmt(c['energy'], '7.3f')} {c['posterior']:7.3f}"
            )
            for p in c["paths"][:1]:
                walk = " ; ".join(f"{h} -{r}-> {t}" for h, r, t in p["triples"]) or "(empty walk)"
                lines.append(
                    f"    best walk (energy {_fmt(p['energy'], '.3f')}, weight "
                    f"{p['weight']:.3f} among its walks): {walk}"
                )
        lines.append(f"stability: {self.stability()}")
        cert = d["certificate"]
        lines.append(
            f"  [paper, Thm. 3: radius = margin / lambda = {_fmt(cert['radius'], '.3g')}; at "
            f"osc(dE) = omega = {_fmt(cert['omega'], '.3g')}: TV <= {cert['tv_sharp']:.3g} "
            f"(sharp), {cert['tv_paper']:.3g} (Eq. (21))]"
        )
        return "\n".join(lines)

    def stability(self) -> str:
        r"""What the evidence would have to change for the best candidate to change, in words
        (the certificate of Thm. 3 read for a user).

        A new evidence state changes each candidate's energy by some :math:`\delta`; the best
        candidate :math:`b` loses its place to a rival :math:`r` only if
        :math:`\delta_b - \delta_r` reaches the certificate's ``radius`` (the posterior
        log-margin over :math:`\lambda`). An energy change of :math:`d` is one supporting
        edge's reliability scaled by :math:`e^{d}` (an edge costs :math:`-\log w`).
        """
        c = self.certificate
        best = self.names[int(self.best)]
        if not bool(c.valid):
            return (
                f"no guarantee for {best}: a candidate the prior supports has no finite energy "
                "(no walk and no slack, kappa = inf), so any new evidence could change the "
                "answer"
            )
        radius = float(c.radius)
        if not np.isfinite(radius):
            why = "lambda = 0" if float(c.lam) == 0 else "it carries all the posterior mass"
            return f"no change of the evidence can make another candidate best ({why})"
        factor = np.exp(radius)
        scale = f"a factor {factor:.3g}" if factor < 1e6 else "a factor over a million"
        return (
            f"{best} stays the best candidate unless new evidence raises its energy by "
            f"{radius:.3g} or more against a rival's, e.g. a rival gains a walk {radius:.3g} "
            f"cheaper, or its own support costs {radius:.3g} more ({scale} in one edge's "
            "reliability)"
        )
