"""The import rule of ``docs/architecture.md``, checked on the source: a module imports only
from units on lower floors (or from its own package); the import graph has no cycle; the
datasets are leaves; experiments and benchmarks import public names only, and neither an
experiment nor a benchmark imports another."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Floor of every unit (a top-level module or subpackage of ``grounding``), bottom first.
#: Keep in sync with the table in docs/architecture.md (checked below).
FLOORS = {
    "grounding._numerics": 0,
    "grounding._checks": 0,
    "grounding._shapes": 0,
    "grounding._names": 0,
    "grounding.io": 0,
    "grounding.programs": 1,
    "grounding.posterior": 1,
    "grounding.geometry": 1,
    "grounding.alignment": 1,
    "grounding.semiring": 1,
    "grounding.graph": 2,
    "grounding.query": 2,
    "grounding.language": 2,
    "grounding.evidence": 3,
    "grounding.energy": 3,
    "grounding.bounds": 3,
    "grounding.hypergraph": 3,
    "grounding.decision": 4,
    "grounding.worlds": 4,
    "grounding.paths": 4,
    "grounding.regularize": 4,
    "grounding.datasets": 4,
    "grounding.problem": 5,
    "grounding.result": 5,
    "grounding.plot": 6,
    "grounding.solver": 7,
    "grounding.learn": 8,
    "grounding.prior": 9,
    # retrieval and plans are siblings: neither imports the other
    "grounding.retrieval": 10,
    "grounding.plans": 10,
    "grounding.qa": 11,
    "grounding.examples": 12,
    "grounding.testing": 12,
}
#: What the dataset loaders may import besides themselves: the data types (and the checks).
DATA_TYPES = {
    "grounding.graph",
    "grounding.evidence",
    "grounding.query",
    "grounding.hypergraph",
    "grounding._checks",
    "grounding._names",
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _unit(module: str) -> str:
    return ".".join(module.split(".")[:2])


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """``(line, imported module, imported names)`` of every import of ``grounding``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("grounding"):
            out.append((node.lineno, node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name, []) for a in node.names if a.name.startswith("grounding")]
    return out


def _package_modules():
    for path in sorted((ROOT / "grounding").rglob("*.py")):
        name = _module_name(path)
        if name != "grounding":
            yield path, name


def test_every_unit_has_a_floor():
    units = {_unit(name) for _, name in _package_modules()}
    assert units == set(FLOORS), units ^ set(FLOORS)


def test_modules_import_only_lower_floors_or_their_own_package():
    bad = []
    for path, name in _package_modules():
        unit = _unit(name)
        for line, mod, names in _imports(path):
            targets = [mod] if mod != "grounding" else [f"grounding.{n}" for n in names]
            for target in targets:
                tu = _unit(target)
                if tu == unit:
                    continue
                if unit == "grounding.datasets" and tu not in DATA_TYPES:
                    bad.append(f"{name}:{line} imports {target} (datasets import data types only)")
                elif FLOORS[tu] >= FLOORS[unit]:
                    bad.append(
                        f"{name}:{line} (floor {FLOORS[unit]}) imports {target} (floor {FLOORS[tu]})"
                    )
    assert not bad, "\n".join(bad)


def test_the_module_import_graph_has_no_cycle():
    graph = {}
    for path, name in _package_modules():
        deps = set()
        for _, mod, names in _imports(path):
            deps.add(mod)
            deps.update(f"{mod}.{n}" for n in names)  # `from pkg import submodule`
        graph[name] = deps
    graph = {m: {d for d in deps if d in graph and d != m} for m, deps in graph.items()}
    # a package imports its submodules to re-export them: that edge is the package's, not a
    # cycle (the submodules never import their package's __init__ back)
    state: dict[str, int] = {}

    def visit(m, stack):
        state[m] = 1
        for d in graph[m]:
            if d.startswith(m + "."):
                continue
            if state.get(d) == 1:
                raise AssertionError(" -> ".join([*stack, m, d]))
            if d not in state:
                visit(d, [*stack, m])
        state[m] = 2

    for m in graph:
        if m not in state:
            visit(m, [])


def test_experiments_and_benchmarks_use_public_names_only():
    bad = []
    for folder in ("experiments", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for line, mod, names in _imports(path):
                private = [p for p in mod.split(".") if p.startswith("_")]
                private += [n for n in names if n.startswith("_")]
                if private:
                    bad.append(f"{path.relative_to(ROOT)}:{line} imports {mod} {names}")
    assert not bad, "\n".join(bad)


def _scripts(folder: str) -> set[str]:
    """The experiments (or benchmark scripts) of a folder: its modules without a leading
    underscore (``_setup``, ``_io``, ``_common``, ... are the shared helpers)."""
    return {p.stem for p in (ROOT / folder).glob("*.py") if not p.stem.startswith("_")}


def _imported_modules(source: str, package: str) -> list[tuple[int, str]]:
    """``(line, module)`` of every import of ``source``, at any depth (inside functions too):
    ``from m import a`` gives ``m`` and ``m.a`` (``a`` may be a submodule); relative imports
    are resolved against ``package``; ``importlib.import_module("...")`` with a literal name
    counts as well."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level:
                base = package.split(".")[: max(len(package.split(".")) - node.level + 1, 0)]
                mod = ".".join([*base, *([mod] if mod else [])])
            out.append((node.lineno, mod))
            out += [(node.lineno, f"{mod}.{a.name}") for a in node.names]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            out.append((node.lineno, node.args[0].value))
    return out


def _cross_imports(source: str, own: str, experiments: set[str], benchmarks: set[str]) -> list:
    """The imports of ``source`` (module ``own``: ``experiments.<x>`` or ``benchmarks.<x>``)
    of an experiment module or a benchmark script other than itself."""
    bad = []
    package = own.rsplit(".", 1)[0]
    for line, mod in _imported_modules(source, package):
        parts = mod.split(".")
        target = None
        if parts[0] == "experiments" and len(parts) > 1 and parts[1] in experiments:
            target = f"experiments.{parts[1]}"
        elif parts[0] == "benchmarks" and len(parts) > 1 and parts[1] in benchmarks:
            target = f"benchmarks.{parts[1]}"
        elif package == "benchmarks" and parts[0] in benchmarks:  # the script's own folder
            target = f"benchmarks.{parts[0]}"
        if target is not None and target != own:
            bad.append((line, target))
    return sorted(set(bad))


def test_the_cross_import_check_sees_every_form_of_import():
    exp, bench = {"grounded_qa", "proh"}, {"paths", "scaling"}
    source = (
        "from experiments.grounded_qa import build\n"
        "from experiments import grounded_qa\n"
        "import experiments.grounded_qa as g\n"
        "def f():\n"
        "    from .grounded_qa import score\n"
        "    importlib.import_module('experiments.grounded_qa')\n"
        "from experiments._setup import build\n"
        "from experiments import _io, _setup\n"
        "import grounding.paths\n"
    )
    found = _cross_imports(source, "experiments.proh", exp, bench)
    assert found == [(i, "experiments.grounded_qa") for i in (1, 2, 3, 5, 6)]
    source = (
        "from paths import sig3\n"
        "import scaling\n"
        "from benchmarks.paths import sig3\n"
        "from experiments.proh import run_blind\n"
        "from _common import sig3\n"
        "from experiments._setup import build\n"
        "from grounding.paths import kbest\n"
        "import paths as own\n"
    )
    found = _cross_imports(source, "benchmarks.paths", exp, bench)
    assert found == [(2, "benchmarks.scaling"), (4, "experiments.proh")]


def test_experiments_and_benchmarks_do_not_import_each_other():
    """No experiment imports another experiment, and no benchmark imports another benchmark
    script or an experiment: what several share lives in a private helper module
    (``experiments/_setup/``, ``_io.py``, ``_stats.py``, ... and ``benchmarks/_common.py``).
    Only the experiments' runner (``experiments/__main__.py``) imports every experiment."""
    experiments, benchmarks = _scripts("experiments"), _scripts("benchmarks")
    assert {"grounded_qa", "proh"} <= experiments and {"paths", "scaling"} <= benchmarks
    bad = []
    for folder in ("experiments", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):  # shared helper packages too
            if path.relative_to(ROOT / folder).as_posix() in ("__init__.py", "__main__.py"):
                continue
            own = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            for line, target in _cross_imports(path.read_text(), own, experiments, benchmarks):
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {target}")
    assert not bad, "\n".join(bad)


def test_architecture_doc_lists_the_same_floors():
    text = (ROOT / "docs" / "architecture.md").read_text()
    for unit in FLOORS:
        assert f"`{unit}`" in text, unit
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and ln[2:3].isdigit()]
    for row in rows:
        floor = int(row.split("|")[1])
        for unit in [u for u in FLOORS if f"`{u}`" in row]:
            assert FLOORS[unit] == floor, (unit, floor)


#: The four sibling question-answering systems: none imports another (they share the qa
#: floor's parts: ``pipeline``, ``outcome``, ``calibration``, ``_checks``, ``candidates``,
#: ``answerer``).
QA_SYSTEMS = (
    "grounding.qa.grounded",
    "grounding.qa.blind",
    "grounding.qa.decomposed",
    "grounding.qa.hypergraph_reasoning",
)


def _sibling_imports(sources: dict[str, Path]) -> list[str]:
    """``module:line imports target`` for every import of one QA system by another (``from
    grounding.qa import grounded`` and ``from grounding.qa.grounded import X`` alike), or of
    a name of the package ``grounding.qa`` itself (its ``__init__`` imports every system)."""
    qa_dir = ROOT / "grounding" / "qa"
    bad = []
    for name, path in sources.items():
        for line, mod, names in _imports(path):
            if mod == "grounding.qa":
                targets = {
                    f"grounding.qa.{n}" if (qa_dir / f"{n}.py").is_file() else "grounding.qa"
                    for n in names
                }
            else:
                targets = {mod}
            bad += [f"{name}:{line} imports {t}" for t in sorted(targets)
                    if t != name and (t in sources or t == "grounding.qa")]  # fmt: skip
    return bad


def test_the_qa_systems_do_not_import_each_other():
    sources = {m: ROOT / (m.replace(".", "/") + ".py") for m in QA_SYSTEMS}
    assert all(p.is_file() for p in sources.values()), sources
    assert _sibling_imports(sources) == []


def test_the_sibling_check_sees_an_import(tmp_path):
    """The check is not vacuous: a system importing a sibling, by either form, is reported."""
    sources = {m: ROOT / (m.replace(".", "/") + ".py") for m in QA_SYSTEMS}
    fake = tmp_path / "blind.py"
    fake.write_text(
        sources["grounding.qa.blind"].read_text()
        + "\nfrom grounding.qa.grounded import grounding_problem\n"
        + "from grounding.qa import decomposed\n"
    )
    bad = _sibling_imports({**sources, "grounding.qa.blind": fake})
    assert len(bad) == 2, bad
    assert bad[0].endswith("imports grounding.qa.grounded"), bad
    assert bad[1].endswith("imports grounding.qa.decomposed"), bad


def test_one_bucket_in_the_package():
    """The one padding rule (``grounding._shapes.bucket``) is defined once in the package;
    the solver, alignment and retrieval import it."""
    defs = [
        f"{p.relative_to(ROOT)}:{node.lineno}"
        for p, _ in _package_modules()
        for node in ast.walk(ast.parse(p.read_text()))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "bucket"
    ]
    assert len(defs) == 1 and defs[0].startswith("grounding/_shapes.py:"), defs
    importers = {
        _unit(name)
        for path, name in _package_modules()
        for _, mod, names in _imports(path)
        if mod == "grounding._shapes" and "bucket" in names
    }
    assert {"grounding.solver", "grounding.alignment", "grounding.retrieval"} <= importers


def test_no_module_is_over_450_lines():
    long = {
        str(p.relative_to(ROOT)): n
        for p, _ in _package_modules()
        if (n := len(p.read_text().splitlines())) > 450
    }
    assert not long, long


def test_mutation_test_modules_do_not_start_jax_at_import():
    """Mutation workers fork from a process that has imported (collected) the selected test
    modules; had one of them started JAX's backend (an array built at module level), every
    forked worker would deadlock. Checked in a fresh interpreter."""
    import subprocess
    import sys
    import tomllib

    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    files = sorted({s.split("::")[0] for s in cfg["pytest_add_cli_args_test_selection"]})
    mods = [".".join(Path(f).with_suffix("").parts) for f in files]  # tests.core.test_energy
    code = (
        "import importlib\n"
        f"for m in {mods!r}: importlib.import_module(m)\n"
        "from jax._src import xla_bridge\n"
        "print(xla_bridge.backends_are_initialized())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False", out.stdout + out.stderr


def test_the_qa_batch_walks_down_the_floors_without_climbing_back():
    """``GroundedQA.answer_batch`` and ``BlindQA.answer_batch`` traced call by call
    (``sys.setprofile``) on a small graph:
    no function of the package calls a function of a unit on a higher floor than its own (a
    callback up the floors would show here), so one batch goes qa -> prior -> retrieval ->
    language -> solver -> core in one direction; and it passes through each of those floors."""
    import sys

    import numpy as np

    from grounding.datasets import KGQuestion
    from grounding.graph import TypedGraph
    from grounding.qa import BlindQA, Candidates, GroundedQA
    from grounding.query import blind
    from grounding.retrieval import PCR, TextIndex
    from grounding.solver import GroundingConfig

    graph = TypedGraph.from_triples(
        [("a", "r", "b"), ("b", "s", "c"), ("a", "r", "d"), ("d", "s", "e")],
        reliability=[0.9, 0.6, 0.5, 0.95],
        entities=["a", "b", "c", "d", "e", "f"],
    )
    pcr = PCR(TextIndex(graph), max_hops=2)

    class Model:  # a model that runs questions together: asked through grounding.prior
        def propose(self, question, k):
            return Candidates.from_scores(["c", "e", "f"], [0.0, -0.5, -1.0], k=k)

        def propose_batch(self, questions, k):
            return [self.propose(q, k) for q in questions]

    class Answerer:  # BlindQA's answerer: scores over the entities for a topic and chain
        entities = graph.entities

        def log_scores(self, topic, chain):
            return np.log(np.array([1e-9, 1e-9, 0.5, 1e-9, 0.3, 0.2]))

    class Predictor:  # BlindQA's relation-chain predictor
        def predict(self, questions, k):
            return [[(("r", "s"), 1.0)] for _ in questions]

    config = GroundingConfig(lam=2.0, kappa=1.0)
    qs = [KGQuestion(f"q{i}", "what does a reach?", "a", ("r", "s"), (), (), "test") for i in "12"]
    qa = GroundedQA(Model(), pcr, config, k_nodes=4)
    blind_qa = BlindQA(Answerer(), Predictor(), pcr, config, k_nodes=4)
    shown = [blind(q) for q in qs]
    qa.answer_batch(qs)  # compile first: tracing runs inside jax, not the walk measured
    blind_qa.answer_batch(shown)
    climbs, seen = [], set()

    def unit_of(frame) -> str | None:
        name = frame.f_globals.get("__name__", "")
        return _unit(name) if name.startswith("grounding.") else None

    def profile(frame, event, arg):
        if event != "call" or frame.f_back is None:
            return
        callee, caller = unit_of(frame), unit_of(frame.f_back)
        if callee is None or caller is None:
            return
        seen.add(callee)
        if FLOORS[callee] > FLOORS[caller]:
            climbs.append(f"{frame.f_back.f_code.co_qualname} ({caller}) -> "
                          f"{frame.f_code.co_qualname} ({callee})")  # fmt: skip

    sys.setprofile(profile)
    try:
        outs = qa.answer_batch(qs) + blind_qa.answer_batch(shown)
    finally:
        sys.setprofile(None)
    assert len(outs) == 4 and all(o.result is not None for o in outs)
    assert not climbs, "\n".join(climbs[:10])
    assert {"grounding.qa", "grounding.prior", "grounding.retrieval", "grounding.language",
            "grounding.solver", "grounding.graph"} <= seen  # fmt: skip
