"""One script per figure of the paper; ``python -m experiments [--smoke|--quick|--full] [--out
DIR]`` regenerates them all. Each module ``experiments.<name>`` has ``main(argv)`` and runs
alone."""

EXPERIMENTS = (
    "fig2_two_worlds",
    "thm3_tv_bound",
    "prop6_soft_to_hard",
    "prop13_tradeoff",
    "kg_incomplete",
    "retrieval_pcr",
    "grounded_qa",
    "pankrag",
    "learned_retrievers",
    "proh",
    "wordnet_llm",
    "metaqa",
)

#: The fast theory figures: ``python -m experiments --smoke``, a first look.
SMOKE = ("fig2_two_worlds", "thm3_tv_bound", "prop6_soft_to_hard", "prop13_tradeoff")

#: The main job (``python -m experiments --quick``): the paper's figures, retrieval on real
#: incomplete graphs and the grounded-QA loop, blind and oracle. ``--all`` adds the retrieval
#: systems' experiments (PankRAG, the learned retrievers, PRoH) and a real language model's
#: answers grounded on WordNet (``wordnet_llm``) and MetaQA on its full and half knowledge base
#: (``metaqa``); ``--full`` runs every one.
QUICK = (*SMOKE, "kg_incomplete", "retrieval_pcr", "grounded_qa")

#: Seconds each experiment's quick mode took on an idle 2-core machine (the time-left estimate),
#: measured 2026-11-27 from a fresh clone by ``python -m experiments --quick --all``;
#: the main job's experiments measured again by README line 1 from a fresh clone after the
#: held-out question wordings and the composed chain predictor (with its set-up: 6 min 17 s),
#: and the ``--all`` experiments by ``--only pankrag,learned_retrievers,proh`` (6 min 15 s);
#: PankRAG and PRoH again by ``--only pankrag,proh`` after their budget rows (4 min 26 s);
#: ``wordnet_llm`` by ``--only wordnet_llm`` on 2026-11-28 (142 s idle, 184 s beside a job);
#: ``metaqa`` by ``python -m experiments.metaqa --quick`` on 2026-12-02 (idle).
QUICK_SECONDS = {
    "fig2_two_worlds": 3,
    "thm3_tv_bound": 1,
    "prop6_soft_to_hard": 2,
    "prop13_tradeoff": 2,
    "kg_incomplete": 36,
    "retrieval_pcr": 9,
    "grounded_qa": 289,
    "pankrag": 198,
    "learned_retrievers": 109,
    "proh": 66,
    "wordnet_llm": 160,
    "metaqa": 488,
}
