"""One script per figure of the paper; ``python -m experiments [--quick|--full] [--out DIR]``
regenerates them all. Each module ``experiments.<name>`` has ``main(argv)`` and runs alone."""

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
)
