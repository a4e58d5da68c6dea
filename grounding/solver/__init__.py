r""":func:`ground`: a :class:`~grounding.GroundingProblem` and an evidence state in, a
:class:`~grounding.GroundingResult` out (the problem -> solver -> output split of OTT-JAX).

For each candidate :math:`\rho`:

1. raw energy :math:`E^{\mathrm{path}}_R(\rho)`: a claim chain over every ``T``-hop walk
   (:func:`grounding.paths.chain_energy_from_costs`), an answer over every walk of
   ``min_hops..max_hops`` edges from the anchors (:func:`grounding.semiring.recursion.run`),
   with edge costs :func:`grounding.edge_cost` — Eq. (11) at ``tau = 0``, Eq. (13) with the
   uniform prior over the walk family otherwise;
2. status (Sec. 3.3, :func:`grounding.classify_status`) and the slack, contradiction-dominant
   energy (Eq. (19), Axiom 4, :func:`grounding.status_energy`), plus any claim energy;
3. the soft posterior (Eq. (7), :func:`grounding.gibbs_log_posterior`) and, given ``eps``,
   the hard posterior (Eq. (6), :func:`grounding.hard_log_posterior`) on the total energy
   without slack (contradicted: ``+inf``) or its abstention;
4. the action (Axiom 8, Eq. (22), :func:`grounding.decide_action`) and the Thm. 3
   certificate; then, on the host, the best supporting walks with their :math:`\nu^*`
   weights (Prop. 2, :func:`grounding.paths.kbest_walks`) of the few best candidates.

The solver runs in one direction through three stages, each a module:
:mod:`~grounding.solver.prepare` (a problem and an evidence state laid out as padded arrays,
with the hashable :class:`~grounding.solver.prepare.Statics` that select a program),
:mod:`~grounding.solver.program` (steps 1-4, compiled) and :mod:`~grounding.solver.support`
(the :class:`~grounding.GroundingResult` and its supporting walks, on the host). Every setting
is one :class:`GroundingConfig`, checked once.

Steps 1-4 are one jitted program (``vmap``-ed over questions by :func:`ground_batch`),
compiled once per configuration and shape bucket (candidates, edges and the nodes of small
evidence graphs padded to powers of two; claim chains by slot counts per hop count, their
indices being inputs); the compiled programs sit in a bounded LRU cache.

For every node of a graph as a candidate answer and many anchor sets at once (soft
path-constrained retrieval), :func:`answer_energies` and :func:`answer_log_posteriors` give
what ``ground`` gives, from one energy field of the path engine (:mod:`~grounding.solver.answers`).
"""

from grounding.solver.answers import answer_energies, answer_log_posteriors
from grounding.solver.config import GroundingConfig
from grounding.solver.solve import ground, ground_batch

__all__ = ["GroundingConfig", "ground", "ground_batch", "answer_energies", "answer_log_posteriors"]
