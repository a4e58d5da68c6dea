"""`GroundingConfig`: checked once, equal to keyword settings, and traceable — `jax.grad` of a
loss through `ground` and `ground_batch` with respect to lambda, kappa and tau equals central
finite differences (float64, as every test runs)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import grounding as g


def _problem(kind="chain"):
    """Three candidates on a small graph: 'f' has no walk, so some costs are +inf (the case
    where a plain -c/tau gives a NaN gradient in tau)."""
    graph = g.TypedGraph.from_triples(
        [("a", "r", "b"), ("b", "s", "c"), ("a", "r", "d"), ("d", "s", "e")],
        reliability=[0.9, 0.6, 0.5, 0.95],
        entities=["a", "b", "c", "d", "e", "f"],
    )
    prior = jnp.log(jnp.array([0.2, 0.3, 0.5]))
    if kind == "answer":
        return g.GroundingProblem("q", ["c", "e", "f"], prior, anchors=("a",), max_hops=2), graph
    chains = [g.ClaimChain(("a", None, t), ("r", "s")) for t in ("c", "e", "f")]
    return g.GroundingProblem("q", chains, prior), graph


def _fd(f, x, h=1e-5):
    return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.parametrize(
    "name, value, words",
    [
        ("lam", -1.0, "lam must be >= 0"),
        ("lam", float("nan"), "lam"),
        ("kappa", 0.0, "kappa must be > 0"),
        ("tau", -0.5, "tau must be >= 0"),
        ("theta", 1.5, "theta must lie in"),
        ("contradiction_penalty", 0.0, "contradiction_penalty must be > 0"),
        ("min_reliability", 2.0, "min_reliability must lie in"),
        ("n_paths", -1, "n_paths must be an int >= 0"),
        ("path_candidates", 1.5, "path_candidates must be an int >= 0"),
        ("lam", [1.0, 2.0], "lam must be a scalar"),
    ],
)
def test_bad_settings_name_themselves(name, value, words):
    kw = {"lam": 1.0, "kappa": 1.0, name: value}
    with pytest.raises((ValueError, TypeError), match=words):
        g.GroundingConfig(**kw)


def test_infinite_settings_are_accepted_where_they_mean_something():
    """No slack, no mismatch allowed, any support, no margin, no hard constraint, the worst
    case oscillation: each at +inf is a valid setting (and the arrays are built once)."""
    inf = float("inf")
    cfg = g.GroundingConfig(
        lam=1.0, kappa=inf, eps=inf, mismatch_cost=inf, eps_s=inf, contradiction_penalty=inf,
        margin_threshold=inf, omega=inf,
    )  # fmt: skip
    assert cfg.arrays() is cfg.arrays()  # one build per config (a batch reads it per question)
    assert all(
        float(cfg.arrays()[k]) == inf
        for k in ("kappa", "eps", "eps_s", "contradiction_penalty", "omega")
    )


def test_unknown_or_missing_settings_are_type_errors():
    problem, graph = _problem()
    with pytest.raises(TypeError, match="unknown settings"):
        g.ground(problem, graph, lam=1.0, kappa=1.0, lamda=2.0)
    with pytest.raises(TypeError, match="missing setting 'kappa'"):
        g.ground(problem, graph, lam=1.0)
    with pytest.raises(TypeError, match="no setting"):
        g.GroundingConfig(lam=1.0, kappa=1.0).replace(kapa=2.0)
    with pytest.raises(TypeError, match="lam must be a number"):
        g.GroundingConfig(lam="1", kappa=1.0)


def test_a_config_and_keywords_give_the_same_result():
    problem, graph = _problem()
    cfg = g.GroundingConfig(lam=3.0, kappa=1.0, eps=0.5, tau=0.2)
    a = g.ground(problem, graph, cfg)
    b = g.ground(problem, graph, lam=3.0, kappa=1.0, eps=0.5, tau=0.2)
    c = g.ground(problem, graph, g.GroundingConfig(lam=9.0, kappa=1.0, eps=0.5), lam=3.0, tau=0.2)
    for r in (b, c):
        np.testing.assert_array_equal(a.log_posterior, r.log_posterior)
        np.testing.assert_array_equal(a.hard_log_posterior, r.hard_log_posterior)
        assert a.triples == r.triples
    [d] = g.ground_batch([problem], graph, cfg)
    np.testing.assert_allclose(a.log_posterior, d.log_posterior, rtol=1e-12)  # vmapped program


@pytest.mark.parametrize("kind", ["chain", "answer"])
@pytest.mark.parametrize("name, at", [("lam", 2.0), ("kappa", 1.5), ("tau", 0.3)])
def test_grad_through_ground_equals_finite_differences(name, at, kind):
    problem, graph = _problem(kind)
    base = dict(lam=2.0, kappa=1.5, tau=0.3, n_paths=0)

    def loss(x):  # the log-probability of the first candidate
        return g.ground(problem, graph, **(base | {name: x})).log_posterior[0]

    got = jax.grad(loss)(at)
    want = _fd(lambda x: float(loss(x)), at)
    assert np.isfinite(got) and abs(float(got)) > 1e-6  # the setting matters here
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-8)


def test_grad_through_ground_batch_and_jit():
    problem, graph = _problem()
    cfg = g.GroundingConfig(lam=2.0, kappa=1.5, n_paths=0)

    def loss(lam):
        rs = g.ground_batch([problem, problem], graph, cfg.replace(lam=lam))
        return rs[0].log_posterior[1] + rs[1].log_posterior[2]

    got = jax.grad(loss)(2.0)
    np.testing.assert_allclose(got, _fd(lambda x: float(loss(x)), 2.0), rtol=1e-5, atol=1e-8)
    jitted = jax.jit(lambda c: g.ground(problem, graph, c).log_posterior)
    np.testing.assert_allclose(jitted(cfg), g.ground(problem, graph, cfg).log_posterior)
    batched = jax.jit(lambda c: [r.log_posterior for r in g.ground_batch([problem] * 2, graph, c)])
    for r in batched(cfg):
        np.testing.assert_allclose(r, g.ground(problem, graph, cfg).log_posterior, rtol=1e-12)


def test_fitting_lambda_by_gradient_moves_it_towards_the_evidence():
    """A few gradient steps on log(lambda) raise the probability of the supported answer."""
    problem, graph = _problem()

    def nll(log_lam):
        r = g.ground(problem, graph, lam=jnp.exp(log_lam), kappa=1.0, n_paths=0)
        return -r.log_posterior[1]  # 'e': the best-supported candidate

    x = jnp.log(0.5)
    for _ in range(20):
        x = x - 0.5 * jax.grad(nll)(x)
    assert nll(x) < nll(jnp.log(0.5)) and jnp.exp(x) > 0.5


def test_results_name_their_answers_and_sum_answer_mass():
    """Two chains reach 'c' through different middles, one leaves the answer open: the
    answer mass of 'c' is the sum of its chains' posterior mass (by hand from the
    posterior), the open chain is left out, and the prior and hard roll-ups read their own
    distributions."""
    graph = g.TypedGraph.from_triples(
        [("a", "r", "b"), ("b", "s", "c"), ("a", "r", "d"), ("d", "s", "c")],
        reliability=[0.9, 0.6, 0.5, 0.95],
        entities=["a", "b", "c", "d", "e"],
    )
    chains = [
        g.ClaimChain(("a", "b", "c"), ("r", "s")),
        g.ClaimChain(("a", "d", "c"), ("r", "s")),
        g.ClaimChain(("a", "b", "e"), ("r", "s")),
        g.ClaimChain(("a", None, None), ("r", "s")),
    ]
    prior = jnp.log(jnp.array([0.1, 0.2, 0.3, 0.4]))
    r = g.ground(g.GroundingProblem("q", chains, prior), graph, lam=2.0, kappa=1.0, eps=1.0)
    assert r.answers == ("c", "c", "e", None)
    post = r.posterior()
    names, probs = r.answer_probabilities()
    assert names == ("c", "e")  # c: 2 chains
    np.testing.assert_allclose(probs, [post[0] + post[1], post[2]], rtol=1e-12)
    names, probs = r.answer_probabilities("prior")
    assert names == ("c", "e")  # 0.1 + 0.2 against 0.3: c is seen first
    np.testing.assert_allclose(probs, [0.3, 0.3], rtol=1e-12)
    hard = np.exp(np.asarray(r.hard_log_posterior))
    np.testing.assert_allclose(r.answer_probabilities("hard")[1].sum(), hard[:3].sum())
    with pytest.raises(ValueError, match="which must be"):
        r.answer_probabilities("posterior")


@pytest.mark.parametrize("tau", [0.0, 0.4])
def test_chains_sharing_a_prefix_equal_each_chain_grounded_alone(tau):
    """One question's chains share the topic, the open middle and the relations: grounded
    together they take one forward pass of the shared prefix; each chain grounded alone takes
    its own. Energies, log masses (hence posteriors and walk weights) agree to rounding."""
    graph = g.TypedGraph.from_triples(
        [("a", "r", "b"), ("b", "s", "c"), ("a", "r", "d"), ("d", "s", "c"), ("d", "s", "e"),
         ("b", "t", "e"), ("a", "s", "e")],
        reliability=[0.9, 0.6, 0.5, 0.95, 0.7, 0.8, 0.99],
        entities=["a", "b", "c", "d", "e", "f"],
    )  # fmt: skip
    ends = ["c", "e", "f", "b"]
    chains = [g.ClaimChain(("a", None, t), ("r", "s")) for t in ends] + [
        g.ClaimChain(("a", "b", "e"), ("r", "t")),  # another prefix: grounded alone
    ]
    prior = jnp.log(jnp.full(len(chains), 1 / len(chains)))
    kw = dict(lam=1.5, kappa=2.0, tau=tau, n_paths=2, path_candidates=None)
    together = g.ground(g.GroundingProblem("q", chains, prior), graph, **kw)
    plan = g.solver.prepare.prepare(
        g.GroundingProblem("q", chains, prior), graph, None, g.GroundingConfig(**kw)
    ).plan
    assert plan.shared[0] == (2, (0, 1, 2, 3))  # the four share one prefix
    assert plan.alone == ((2, (4,)),)
    for i, c in enumerate(chains):
        alone = g.ground(g.GroundingProblem("q", [c], jnp.zeros(1)), graph, **kw)
        np.testing.assert_allclose(together.raw_energy[i], alone.raw_energy[0], rtol=1e-12)
        assert together.triples[i] == alone.triples[0]
        np.testing.assert_allclose(
            together.paths.weight[i], alone.paths.weight[0], rtol=1e-9, atol=1e-12
        )


def _blind_like(seed, n_questions=6):
    """Questions shaped like the blind loop's: one topic each, whose claims follow one to
    three relation paths of one to three hops with one to six answers each (paths with at
    least four answers share a prefix, the others are grounded chain by chain), so nearly
    every question arranges its candidates differently."""
    rng = np.random.default_rng(seed)
    ents, rels = [f"e{i}" for i in range(12)], ["r0", "r1", "r2", "r3"]
    triples = sorted({(ents[rng.integers(12)], rels[rng.integers(4)], ents[rng.integers(12)])
                      for _ in range(30)})  # fmt: skip
    graph = g.TypedGraph.from_triples(
        triples, reliability=rng.uniform(0.3, 1.0, len(triples)), entities=ents
    )
    problems = []
    for q in range(n_questions):
        topic, chains = ents[rng.integers(12)], []
        for _ in range(int(rng.integers(1, 4))):
            t = int(rng.integers(1, 4))
            path = tuple(rels[rng.integers(4)] for _ in range(t))
            for a in rng.choice(12, int(rng.integers(1, 7)), replace=False):
                chains.append(g.ClaimChain((topic, *([None] * (t - 1)), ents[a]), path))
        prior = g.log_normalize(rng.normal(size=len(chains)))
        problems.append(g.GroundingProblem(f"q{q}", chains, prior))
    return graph, problems


@pytest.mark.parametrize("tau", [0.0, 0.5])
def test_differently_arranged_chains_share_one_program_and_equal_ground(tau):
    """Blind-like questions whose candidates fall in different hop-count and shared-prefix
    groups (each its own program when the groups' indices were static) are grounded by one
    compiled program: the candidate indices are inputs, empty slots point past the last
    candidate and are dropped. Each result equals ``ground``'s for the question alone, and the
    walk report's costs are compiled once per padded shape, not per question."""
    from grounding import programs
    from grounding.solver import prepare

    graph, problems = _blind_like(3)
    cfg = g.GroundingConfig(lam=1.0, kappa=2.0)
    laid = [prepare.prepare(p, graph, None, cfg) for p in problems]
    assert len({p.plan for p in laid}) == len(problems)  # every question arranged differently
    assert len({p.statics.structure for p in laid}) > 2  # and laid out in several shapes alone
    kw = dict(lam=1.0, kappa=2.0, tau=tau, n_paths=2, path_candidates=None)
    programs.clear_solver_programs()
    batch = g.ground_batch(problems, graph, **kw)
    live = programs.program_info()["by_kind"]
    assert live["solver"] == 1  # one program for the batch
    assert live["chain costs"] <= 6  # hop counts x batch buckets
    for p, b in zip(problems, batch):
        one = g.ground(p, graph, **kw)
        for field in ("raw_energy", "energy", "status", "log_posterior", "best", "action"):
            np.testing.assert_allclose(getattr(b, field), getattr(one, field), rtol=0, atol=1e-10)
        np.testing.assert_allclose(b.paths.weight, one.paths.weight, rtol=0, atol=1e-10)
        np.testing.assert_allclose(b.paths.cost, one.paths.cost, rtol=0, atol=1e-10)
        assert b.triples == one.triples
        for i, c in enumerate(p.candidates[:3]):  # and each chain grounded alone
            alone = g.ground(g.GroundingProblem("q", [c], np.zeros(1)), graph, **kw)
            np.testing.assert_allclose(b.raw_energy[i], alone.raw_energy[0], rtol=0, atol=1e-10)


# ----------------------------------------------------------------------------- the default eps
def _uncertain():
    """Answers at walk energies 0, log 2, log 4 and log 10 from 'a' (one edge each), one with
    no walk, one contradicted (a counter-evidence triple on a walk of energy 0)."""
    graph = g.TypedGraph.from_triples(
        [("a", "r", "b"), ("a", "r", "c"), ("a", "r", "d"), ("a", "r", "e"), ("a", "r", "x")],
        reliability=[1.0, 0.5, 0.25, 0.1, 1.0],
        entities=["a", "b", "c", "d", "e", "f", "x"],
    )
    state = g.EvidenceState(graph, negative=frozenset({("a", "r", "x")}))
    ends = ("b", "c", "d", "e", "f", "x")
    chains = [g.ClaimChain(("a", t), ("r",)) for t in ends]
    return g.GroundingProblem("q", chains, jnp.log(jnp.full(6, 1 / 6))), state


def test_the_default_eps_follows_the_support_tolerance():
    """``eps`` defaults to ``"support"``: the hard tolerance is ``eps_s``, itself ``kappa`` by
    default, so the hard feasible set is exactly the supported candidates, whatever kappa and
    eps_s; a number is the tolerance itself; ``None`` gives no hard posterior."""
    from grounding.solver.config import SUPPORT

    problem, state = _uncertain()
    S = g.EvidenceStatus
    assert g.GroundingConfig(lam=1.0, kappa=1.0).eps == SUPPORT == "support"
    for kappa, eps_s in ((1.0, None), (0.5, None), (2.0, None), (3.0, 0.1), (1.0, 1.5)):
        cfg = g.GroundingConfig(lam=1.0, kappa=kappa, eps_s=eps_s)
        tol = kappa if eps_s is None else eps_s
        assert float(cfg.arrays()["eps"]) == float(cfg.arrays()["eps_s"]) == tol
        for res in (g.ground(problem, state, cfg), g.ground_batch([problem], state, cfg)[0]):
            supported = np.asarray(res.status) == int(S.SUPPORTED)
            kept = np.asarray(res.hard_log_posterior) > -np.inf
            np.testing.assert_array_equal(kept, supported, err_msg=f"{kappa=}, {eps_s=}")
            assert supported.any() and not supported.all()  # the sets are not trivial
            assert not bool(res.hard_abstained)
    # a number: the hard set is {raw energy <= eps}, whatever the statuses
    res = g.ground(problem, state, g.GroundingConfig(lam=1.0, kappa=3.0, eps=0.0))
    np.testing.assert_array_equal(np.asarray(res.hard_log_posterior) > -np.inf,
                                  [True, False, False, False, False, False])  # fmt: skip
    none = g.ground(problem, state, g.GroundingConfig(lam=1.0, kappa=1.0, eps=None))
    assert none.hard_log_posterior is None and none.hard_abstained is None
    assert g.GroundingConfig(lam=1.0, kappa=1.0, eps=None).flags()[1] is False


@pytest.mark.parametrize("bad", ["bogus", "Support", "", "kappa"])
def test_an_eps_string_other_than_support_is_refused(bad):
    with pytest.raises(ValueError, match="eps must be a number, 'support' or None"):
        g.GroundingConfig(lam=1.0, kappa=1.0, eps=bad)
    with pytest.raises(ValueError, match="eps must be"):
        g.GroundingConfig(lam=1.0, kappa=1.0).replace(eps=bad)


def test_the_default_eps_survives_tree_map_jit_and_grad():
    """The default stays ``"support"`` through ``tree_map`` (no leaf of its own: it follows
    the mapped kappa / eps_s), ``jit`` and ``jax.grad``; the gradient of a loss of the hard
    tolerance flows to kappa (default eps_s) or to eps_s when set."""
    cfg = g.GroundingConfig(lam=1.0, kappa=1.5)
    doubled = jax.tree_util.tree_map(lambda x: 2 * x, cfg)
    assert doubled.eps == "support" and float(doubled.kappa) == 3.0
    assert float(doubled.arrays()["eps"]) == 3.0
    assert len(jax.tree_util.tree_leaves(cfg)) == len(
        jax.tree_util.tree_leaves(cfg.replace(eps=None))
    )  # no leaf for "support"
    assert float(jax.jit(lambda c: c.arrays()["eps"])(cfg)) == 1.5

    def tolerance(c):
        return 3.0 * c.arrays()["eps"]

    grad = jax.grad(tolerance)(cfg)
    assert grad.eps == "support" and float(grad.kappa) == 3.0 and float(grad.lam) == 0.0
    grad = jax.grad(tolerance)(cfg.replace(eps_s=0.5))
    assert float(grad.eps_s) == 3.0 and float(grad.kappa) == 0.0
    grad = jax.grad(lambda k: tolerance(g.GroundingConfig(lam=1.0, kappa=k)))(1.5)
    assert float(grad) == 3.0
    # a number eps is its own leaf: the gradient goes there, not to kappa
    grad = jax.grad(tolerance)(cfg.replace(eps=0.25))
    assert float(grad.eps) == 3.0 and float(grad.kappa) == 0.0
    # ground under a traced kappa keeps the default's hard posterior
    problem, state = _uncertain()

    def loss(kappa):
        return g.ground(problem, state, cfg.replace(kappa=kappa, n_paths=0)).log_posterior[1]

    assert np.isfinite(float(jax.grad(loss)(1.5)))
    traced = jax.jit(lambda c: g.ground(problem, state, c.replace(n_paths=0)).hard_log_posterior)
    np.testing.assert_array_equal(
        np.asarray(traced(cfg)) > -np.inf,
        np.asarray(g.ground(problem, state, cfg).hard_log_posterior) > -np.inf,
    )


@pytest.mark.parametrize("tau", [0.0, 0.3])
def test_a_config_replaced_inside_jit_keeps_its_path_rule(tau):
    """Regression: inside ``jit`` a config's leaves are tracers, so ``replace`` (or keyword
    settings given to ``ground`` with a config) rebuilt it with a traced ``tau``, which read as
    the entropic rule even at ``tau = 0``: raw energies +inf and a uniform posterior, silently.
    The copy keeps the path rule unless ``tau`` itself changes."""
    problem, graph = _problem()
    cfg = g.GroundingConfig(lam=1.0, kappa=1.5, tau=tau, n_paths=0)
    want = g.ground(problem, graph, cfg.replace(lam=2.0))
    for f in (
        lambda c: g.ground(problem, graph, c.replace(lam=2.0)),
        lambda c: g.ground(problem, graph, c, lam=2.0),
    ):
        got = jax.jit(lambda c, f=f: (lambda r: (r.raw_energy, r.log_posterior))(f(c)))(cfg)
        np.testing.assert_allclose(got[0], want.raw_energy, rtol=1e-12)
        np.testing.assert_allclose(got[1], want.log_posterior, rtol=1e-12)
    assert cfg.replace(lam=2.0).tropical is (tau == 0.0)
    assert cfg.replace(tau=0.5).tropical is False and cfg.replace(tau=0.0).tropical is True


def test_a_finite_setting_too_large_for_the_float_width_is_reported_as_given():
    with jax.enable_x64(False):
        with pytest.raises(ValueError, match=r"lam=1e\+308 is too large for float32"):
            g.GroundingConfig(lam=1e308, kappa=1.0)
        with pytest.raises(ValueError, match="lam must be finite, got inf"):
            g.GroundingConfig(lam=float("inf"), kappa=1.0)


def test_a_traced_min_reliability_names_the_setting():
    """``min_reliability`` is static (it picks the edges that count as counter-support): a
    traced value is refused by name, not by JAX's conversion error."""

    def build(m):
        return g.GroundingConfig(lam=1.0, kappa=1.0, min_reliability=m).lam

    with pytest.raises(TypeError, match="min_reliability is a static setting"):
        jax.jit(build)(0.5)
