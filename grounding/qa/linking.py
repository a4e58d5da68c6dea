r"""Answer linking: from a model's answer text to the graph entities it names, and what an
answer that names none, or several, becomes.

One matching form, :func:`normalize_answer`: Unicode case folding, ``_`` read as a space,
runs of white space collapsed, surrounding quotes and white space and final periods removed
(repeated until nothing changes, so the form of a form is itself). :class:`AnswerLinker`
links an answer to *every* entity whose normalized name or normalized text equals the
answer's normalized form (in vocabulary order, each once). Only when no entity has that form,
a leading English article is set aside on both sides (``the``, ``a``, ``an``): "The MAPK
pathway." links to ``mapk_pathway``, and "Hague" to ``the_hague``, while "The Beatles" links
to ``the_beatles`` itself when the graph has it.

:meth:`Candidates.from_answers <grounding.qa.Candidates.from_answers>` turns a model's
answers and their log-weights into candidates with these rules:

(a) **Out of graph.** An answer that links to no entity is still a candidate: the evidence
    does not show it (the paper's *unobserved* case), which is not evidence that it is false.
    Its name is its normalized form and it is listed in ``Candidates.out_of_graph``. That name
    is never the name of an entity of the linker's vocabulary (an entity so named would
    normalize to the same form and be linked), so it cannot stand for a graph entity.
    :func:`grounding.ground` grounds it as an entity without edges: raw energy ``+inf``,
    status unsupported, slack energy ``kappa`` (Eq. (19)), so it keeps prior mass
    :math:`\propto p_\theta\,e^{-\lambda\kappa}` in the soft posterior and is outside the hard
    feasible set.
(b) **Ambiguous names.** An answer that names ``k > 1`` entities (WordNet: ``bank`` names many
    synsets) is linked to all of them, its prior mass split equally: each reading gets
    :math:`\log w - \log k`. The evidence then re-weights the readings: where it tells them
    apart, the best-supported reading wins; where it does not, they stay tied.
(c) **Merging.** Answers that link to the same entity (different forms, or one form among the
    readings of another) merge by log-sum-exp of their log-weights; so do out-of-graph answers
    with the same normalized form.
(d) **Dropped.** An answer whose normalized form is empty cannot be a candidate at all; it is
    kept in ``Candidates.dropped`` for reports. When nothing is left, the model abstains with
    that reason.

Example:
    >>> linker = AnswerLinker(["bank.n.01", "bank.n.02", "river.n.01"],
    ...                       texts=["bank", "Bank", "river"])
    >>> linker.link(" BANK. "), linker.link("a river bank")
    (('bank.n.01', 'bank.n.02'), ())
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["AnswerLinker", "normalize_answer"]

_QUOTES = "\"'`“”‘’ "


def _once(x: str) -> str:
    x = x.casefold().replace("_", " ")
    x = re.sub(r"\s+", " ", x).strip()
    return x.strip(_QUOTES).rstrip(".").strip()


def _without_article(form: str) -> str:
    """A normalized form without its leading English article (``the``, ``a``, ``an``)."""
    return re.sub(r"^(?:the|an|a) (?=\S)", "", form)


def normalize_answer(text: str) -> str:
    """The matching form of an answer or entity name (see the module docstring); idempotent:
    ``normalize_answer(normalize_answer(x)) == normalize_answer(x)``.

    Example:
        >>> normalize_answer('  "Amino_Acid,  Peptide or Protein." ')
        'amino acid, peptide or protein'
    """
    if not isinstance(text, str):
        raise TypeError(f"an answer must be a str, got {type(text).__name__}")
    x = _once(text)
    for _ in range(len(x) + 1):  # each further pass only removes characters
        y = _once(x)
        if y == x:
            return x
        x = y
    return x


class AnswerLinker:
    """Links answer texts to the entities they name (module docstring).

    Args:
        entities: the graph's entity names.
        texts: optional display text per entity (e.g. node texts); an answer matching the
            normalized name *or* the normalized text of an entity links to it.

    Raises:
        ValueError: an empty vocabulary, or ``texts`` of another length.

    Example:
        >>> AnswerLinker(["Q90", "Q64"], ["Paris", "Berlin"]).link("paris")
        ('Q90',)
    """

    def __init__(self, entities: Sequence[str], texts: Sequence[str] | None = None):
        if isinstance(entities, (str, bytes)):
            raise TypeError(
                f"entities must be a sequence of names, not a string: {entities!r:.100}"
            )
        entities = tuple(entities)
        if not entities:
            raise ValueError("entities is empty: answers need a vocabulary to link to")
        if texts is not None and len(texts) != len(entities):
            raise ValueError(f"texts has {len(texts)} entries for {len(entities)} entities")
        self.entities = entities
        self.texts = None if texts is None else tuple(texts)
        found: dict[str, dict[str, None]] = {}
        bare: dict[str, dict[str, None]] = {}  # the forms without a leading article
        for i, e in enumerate(entities):  # in vocabulary order: each form's entities are too
            forms = {normalize_answer(e)}
            if self.texts is not None and self.texts[i]:
                forms.add(normalize_answer(self.texts[i]))
            for f in forms:
                found.setdefault(f, {})[e] = None
                bare.setdefault(_without_article(f), {})[e] = None
        for table in (found, bare):
            table.pop("", None)  # an empty form names nothing
        self._lookup = {f: tuple(es) for f, es in found.items()}
        self._bare = {f: tuple(es) for f, es in bare.items()}

    def link(self, answer: str) -> tuple[str, ...]:
        """Every entity whose normalized name or text equals the normalized ``answer``, in
        vocabulary order; when none does, every entity whose form equals it with a leading
        article set aside on both sides (``()``: the answer names no entity)."""
        form = normalize_answer(answer)
        return self._lookup.get(form) or self._bare.get(_without_article(form), ())

    def __repr__(self) -> str:
        return f"AnswerLinker({len(self.entities)} entities, texts={self.texts is not None})"
