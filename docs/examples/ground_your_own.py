"""Ground your own LLM's answers: the script of docs/ground-your-own.md, section by section.

Run it as it is (``python docs/examples/ground_your_own.py``): it builds a small company
graph, grounds an LLM's raw answers on it, runs the question-answering loop with a candidate
model of your own, then talks to an OpenAI-compatible server (a small one started in this
process, standing in for yours) and shows what each failure of that server looks like. Every
step checks what it prints; the last line reads "all checks passed".
"""

# ruff: noqa: E402  (each section imports what it uses, as the page shows it)

# --8<-- [start:graph]
import jax.numpy as jnp

import grounding as g

# (head, relation, tail) and how much you trust each fact's source, in (0, 1]
facts = [
    ("alice", "works_for", "acme", 0.9),
    ("acme", "founded_by", "bob", 0.8),
    ("acme", "based_in", "berlin", 1.0),
    ("alice", "lives_in", "berlin", 0.6),
    ("bob", "born_in", "vienna", 0.7),
    ("carol", "works_for", "globex", 0.95),
    ("globex", "founded_by", "dave", 0.9),
]
graph = g.TypedGraph.from_triples(
    [f[:3] for f in facts],
    reliability=[f[3] for f in facts],
    entities=["alice", "acme", "bob", "berlin", "vienna", "carol", "globex", "dave", "graz"],
)
print(graph)  # TypedGraph(nodes=9, edges=7, relations=5)
# --8<-- [end:graph]
assert repr(graph) == "TypedGraph(nodes=9, edges=7, relations=5)"

# --8<-- [start:candidates]
question = "Who founded Alice's employer?"
# what your LLM answered, with the log-probability it gave each answer (raw: they do not
# sum to one, since the model spread the rest of its mass over answers it did not give)
answers = ["bob", "dave", "berlin"]
logprobs = jnp.array([-0.9, -1.4, -2.8])
# each answer as the claim chain it asserts: alice -works_for-> (someone) -founded_by-> answer
chains = [g.ClaimChain(("alice", None, a), ("works_for", "founded_by")) for a in answers]
try:
    g.GroundingProblem(question, chains, logprobs)
except ValueError as err:
    print(err)  # log_prior does not normalize ... GroundingProblem.from_logprobs(...) ...
problem = g.GroundingProblem.from_logprobs(question, chains, logprobs)
print(jnp.exp(problem.log_prior))  # the prior over these three answers: [0.57 0.35 0.09]
# --8<-- [end:candidates]
assert abs(float(jnp.exp(problem.log_prior).sum()) - 1) < 1e-6

# --8<-- [start:ground]
result = g.ground(problem, graph, lam=4.0, kappa=1.0)
print(result.decision, result.answer, result.answer_name)  # ANSWER bob alice->*->bob
for name, status, p in zip(result.names, result.status, result.posterior()):
    print(f"{name:20} {g.EvidenceStatus(int(status))!s:12} posterior {p:.3f}")
best = result.to_dict()["candidates"][int(result.best)]
print(best["paths"][0]["triples"])  # the supporting path: alice -works_for-> acme -founded_by-> bob
print(result.stability())  # how far the evidence would have to move to change the answer
print(result.summary())  # all of it, as text
# --8<-- [end:ground]
assert (result.answer, result.answer_name) == ("bob", "alice->*->bob")
assert best["paths"][0]["triples"] == [
    ["alice", "works_for", "acme"],
    ["acme", "founded_by", "bob"],
]
statuses = [g.EvidenceStatus(int(s)).name for s in result.status]
assert statuses == ["SUPPORTED", "UNSUPPORTED", "UNSUPPORTED"]

# --8<-- [start:no_answer]
born = [g.ClaimChain(("bob", city), ("born_in",)) for city in ("graz", "vienna")]
where = g.GroundingProblem.from_logprobs("Where was Bob born?", born, jnp.array([-0.1, -2.5]))
weak = g.ground(where, graph, lam=1.0, kappa=1.0)
print(weak.decision, weak.answer)  # RETRIEVE None: the favourite, graz, has no support
strong = g.ground(where, graph, lam=4.0, kappa=1.0)
print(strong.decision, strong.answer)  # ANSWER vienna
picky = g.ground(where, graph, lam=4.0, kappa=1.0, theta=0.9)
print(picky.decision, picky.answer)  # ABSTAIN None: vienna's posterior is below 0.9
# --8<-- [end:no_answer]
assert (weak.decision, weak.answer) == (g.Action.RETRIEVE, None)
assert (strong.decision, strong.answer) == (g.Action.ANSWER, "vienna")
assert (picky.decision, picky.answer) == (g.Action.ABSTAIN, None)

# --8<-- [start:answer_form]
loose = g.GroundingProblem.from_logprobs(
    question, answers, logprobs, anchors=("alice",), max_hops=2
)  # answers instead of claim chains: any walk of 1-2 edges from alice supports
res = g.ground(loose, graph, lam=4.0, kappa=1.0)
for name, status in zip(res.names, res.status):
    print(name, g.EvidenceStatus(int(status)))  # bob SUPPORTED, dave UNSUPPORTED, berlin SUPPORTED
# --8<-- [end:answer_form]
assert [g.EvidenceStatus(int(s)).name for s in res.status] == [
    "SUPPORTED",
    "UNSUPPORTED",
    "SUPPORTED",
]

# --8<-- [start:qa]
import dataclasses

from grounding.prior import Candidates
from grounding.qa import GroundedQA
from grounding.retrieval import PCR, TextIndex


@dataclasses.dataclass(frozen=True)
class Question:
    text: str
    topic: str  # the entity the question is about (a graph entity)
    chain: tuple[str, ...] = ()  # optional: the relations it asks along, when you know them


class MyLLM:
    """Your model: any object with propose(question, k) -> Candidates."""

    def propose(self, question, k):
        said = {  # stands in for a call to your model: answers and their log-probabilities
            "Who founded Alice's employer?": (["bob", "dave", "berlin"], [-0.9, -1.4, -2.8]),
            "Where was Bob born?": (["graz", "vienna"], [-0.1, -2.5]),
            "Where does Alice live?": (["vienna", "berlin"], [-0.3, -1.5]),
        }
        names, lps = said[question.text]
        return Candidates.from_scores(names, lps, k=k)  # normalized here


qa = GroundedQA(MyLLM(), PCR(TextIndex(graph), max_hops=2), g.GroundingConfig(lam=4.0, kappa=1.0))
outs = qa.answer_batch(
    [
        Question("Who founded Alice's employer?", "alice", ("works_for", "founded_by")),
        Question("Where was Bob born?", "bob"),  # no chain: grounded as answers
    ]
)
for out in outs:
    print(out.answer, out.result.decision, out.reason)  # bob ANSWER None; vienna ANSWER None
print(outs[0].probabilities("prior"), outs[0].probabilities("soft"), outs[0].probabilities("hard"))
# --8<-- [end:qa]
assert [o.answer for o in outs] == ["bob", "vienna"]
assert outs[0].probabilities("hard").tolist() == [1.0, 0.0, 0.0]

# --8<-- [start:choose]
import math

from grounding.qa import fit_lambda

# kappa: what a candidate without support pays, in a walk's units (-log w per fact): the
# energy of the weakest walk you would still call support. Two facts of reliability 0.6:
kappa = -2 * math.log(0.6)  # 1.02
# lam: between a supported candidate (energy 0) and one without support (energy kappa), the
# posterior odds move by at most a factor e^(lam * kappa). Fit it on a few questions whose
# answers you know; in one of them the graph is stale (Alice moved to Vienna):
labelled = [
    (Question("Who founded Alice's employer?", "alice", ("works_for", "founded_by")), ["bob"]),
    (Question("Where was Bob born?", "bob", ("born_in",)), ["vienna"]),
    (Question("Where does Alice live?", "alice", ("lives_in",)), ["vienna"]),
]
questions = [q for q, _ in labelled]
retriever = PCR(TextIndex(graph), max_hops=2)
base = g.GroundingConfig(lam=1.0, kappa=kappa)
found = GroundedQA(MyLLM(), retriever, base).answer_batch(questions)
lam = fit_lambda(found, [gold for _, gold in labelled])  # energies do not depend on lam
print(f"lam = {lam:.2f}: the evidence moves the odds by up to {math.exp(lam * kappa):.0f}x")
# theta: answer only when the best candidate's posterior mass is at least theta
for theta in (None, 0.8):
    fitted = GroundedQA(MyLLM(), retriever, base.replace(lam=lam, theta=theta))
    for out in fitted.answer_batch(questions):
        best = float(out.result.posterior().max())
        radius = float(out.result.certificate.radius)
        print(
            f"theta {theta}: {out.result.decision.name:8} {out.answer!s:7} "
            f"posterior {best:.2f}, radius {radius:.2f}"
        )
# --8<-- [end:choose]
chosen = [[o.answer for o in GroundedQA(MyLLM(), retriever, base.replace(lam=lam, theta=t))
           .answer_batch(questions)] for t in (None, 0.8)]  # fmt: skip
assert 3.0 < lam < 5.0, lam
assert chosen == [["bob", "vienna", "berlin"], ["bob", None, None]], chosen

# --8<-- [start:server]
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from grounding.language import Endpoint
from grounding.prior import OpenAICompatibleModel

received = []  # the requests the server saw
mode = {"reply": "ok"}  # what the server does next: ok, error, not-json, slow


def completion(text, token_logprobs):
    """One choice of a chat completion, with its tokens' log-probabilities."""
    tokens = [{"token": t, "logprob": lp} for t, lp in token_logprobs]
    return {"message": {"role": "assistant", "content": text}, "logprobs": {"content": tokens}}


class ChatServer(BaseHTTPRequestHandler):
    def do_POST(self):
        received.append(
            (self.path, json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        )
        status, body = (
            200,
            {
                "object": "chat.completion",
                "choices": [
                    completion("Bob", [("Bob", -0.3)]),
                    completion("Dave.", [("Dave", -1.2), (".", -0.4)]),
                    completion("The founder", [("The", -2.0), (" founder", -0.5)]),
                ],
            },
        )
        if mode["reply"] == "error":
            status, body = 500, {"error": {"message": "model overloaded"}}
        if mode["reply"] == "slow":
            time.sleep(2.0)
        data = b"<html>busy</html>" if mode["reply"] == "not-json" else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), ChatServer)
threading.Thread(target=server.serve_forever, daemon=True).start()
base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"  # your server's API root

endpoint = Endpoint(base_url, "my-model", timeout=10.0)  # key: api_key= or $OPENAI_API_KEY
llm = OpenAICompatibleModel(endpoint, graph.entities, n_samples=3)
ask = Question("Who founded Alice's employer?", "alice", ("works_for", "founded_by"))
cands = llm.propose(ask, k=10)
path, request = received[-1]
print(path)  # /v1/chat/completions
print(json.dumps(request, indent=1))  # model, messages, temperature, max_tokens, stop, logprobs, n
print(
    cands.entities, cands.log_prior.round(3), cands.out_of_graph
)  # ('bob', 'dave', 'the founder') ... ('the founder',)
config = g.GroundingConfig(lam=4.0, kappa=1.0)
out = GroundedQA(llm, PCR(TextIndex(graph), max_hops=2), config).answer(ask)
print(out.answer)  # bob
# --8<-- [end:server]
assert path == "/v1/chat/completions" and request["logprobs"] is True and request["n"] == 3
assert request["messages"][1]["content"].startswith("Question: Who founded Alice's employer?")
assert cands.entities == ("bob", "dave", "the founder") and cands.out_of_graph == ("the founder",)
assert out.answer == "bob"

# --8<-- [start:failures]
import socket

from grounding.prior import CandidateModelError

with socket.socket() as s:  # a port where nothing listens
    s.bind(("127.0.0.1", 0))
    closed = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
cases = {
    "refused": (Endpoint(closed, "my-model"), "ok"),
    "HTTP error": (Endpoint(base_url, "my-model", retries=0), "error"),
    "not JSON": (Endpoint(base_url, "my-model"), "not-json"),
    "timeout": (Endpoint(base_url, "my-model", timeout=0.5), "slow"),
}
errors, reasons = {}, {}
for what, (ep, reply) in cases.items():
    mode["reply"] = reply
    model = OpenAICompatibleModel(ep, graph.entities, n_samples=3)
    try:
        model.propose(ask, k=10)
    except CandidateModelError as err:  # every endpoint failure arrives as this
        print(f"{what}: {err}")
        errors[what] = str(err)
    out = GroundedQA(model, PCR(TextIndex(graph)), config).answer(ask)
    print(f"  in the loop: answer {out.answer}, reason: {out.reason}")
    reasons[what] = out.reason
# --8<-- [end:failures]
server.shutdown()
expected = {
    "refused": "cannot connect (connection refused)",
    "HTTP error": "HTTP 500 Internal Server Error",
    "not JSON": "reply is not JSON",
    "timeout": "no complete reply within the deadline of 0.5 s",
}
for what, (ep, _) in cases.items():
    assert expected[what] in errors[what] and errors[what].startswith(ep.url), errors[what]
    assert reasons[what] == f"candidate model failed (CandidateModelError): {errors[what]}"
print("all checks passed")
