"""Entity linking for retrieval (:mod:`grounding.retrieval.linking`): the mentions of the
package's one linking rule, an ambiguous mention's entities ordered by the index's encoder."""

from __future__ import annotations

import numpy as np
import pytest
from _retrieval import TableEncoder

from grounding import TypedGraph
from grounding.retrieval import EntityLinker, TextIndex


def test_entity_linker_finds_names_and_texts_longest_first():
    g = TypedGraph.from_triples(
        [("lou_seal", "mascot_of", "giants"), ("sf", "has", "giants"), ("sf2", "r", "giants")],
        entities=["lou_seal", "giants", "sf", "sf2"],
        texts=["Lou Seal: mascot", "San Francisco Giants (team)", "San Francisco", "San Francisco"],
    )
    linker = EntityLinker(TextIndex(g))
    got = linker.mentions("Is the mascot of the San Francisco Giants Lou Seal?")
    assert [(m.text, m.entities) for m in got] == [
        ("san francisco giants", ("giants",)),  # the longest form wins over "San Francisco"
        ("lou seal", ("lou_seal",)),
    ]
    (m,) = linker.mentions("Where is San Francisco?")
    assert set(m.entities) == {"sf", "sf2"}  # ambiguous: both, closest to the text first
    assert linker.link("What of the who?") == () and linker.link("LOU_SEAL") == ("lou_seal",)
    with pytest.raises(TypeError, match="TextIndex"):
        EntityLinker(g)
    with pytest.raises(TypeError, match="str"):
        linker.link(None)


@pytest.mark.parametrize("closest", ["sf", "sf2"])
def test_an_ambiguous_mention_lists_the_entity_closest_to_the_text_first(closest):
    texts = {"sf": "San Francisco (city)", "sf2": "San Francisco (county)", "giants": "Giants"}
    g = TypedGraph.from_triples(
        [("sf", "has", "giants"), ("sf2", "r", "giants")],
        entities=list(texts),
        texts=list(texts.values()),
    )
    q = "Where is San Francisco?"
    near = {"sf": [1.0, 0.1, 0.0], "sf2": [0.1, 1.0, 0.0]}
    vecs = {texts["sf"]: [1.0, 0.0, 0.0], texts["sf2"]: [0.0, 1.0, 0.0],
            texts["giants"]: [0.0, 0.0, 1.0], q: near[closest]}  # fmt: skip
    linker = EntityLinker(TextIndex(g, TableEncoder({k: np.array(v) for k, v in vecs.items()})))
    (m,) = linker.mentions(q)
    other = "sf2" if closest == "sf" else "sf"
    assert m.text == "san francisco" and m.entities == (closest, other)
    assert linker.link(q) == (closest, other)
