"""Language: text in and text out, no graph maths.

- **Words**: the one tokenizer (:func:`tokenize`) and the lexical scorer :class:`BM25`
  (:mod:`~grounding.language.lexical`);
- **vectors**: text encoders (:class:`HashingEncoder` offline, :class:`SentenceTransformerEncoder`
  with the ``grounding[text]`` extra), the one check of what an encoder returns
  (:func:`checked_embeddings`) and an on-disk :class:`EmbeddingCache`
  (:mod:`~grounding.language.encoders`);
- **names**: the one linking rule from text to the entities it names: a matching form
  (:func:`normalize_answer`), surface forms (:func:`surface_forms`), whole answers and the
  mentions inside free text (:class:`AnswerLinker`, :mod:`~grounding.language.linking`);
- **phrases**: the phrases that name keys (e.g. relations) found inside a text, longest
  first (:class:`PhraseIndex`), from labels (:func:`label_phrases`) and learned from
  examples (:func:`learned_phrases`) (:mod:`~grounding.language.phrases`);
- **language models**: over HTTP, one OpenAI-compatible endpoint that every client of the
  package (candidate model, planner, relevance refiner, community summarizer) talks through
  (:class:`Endpoint`: what a request guarantees against a misbehaving server); in-process, a
  small GGUF model evaluated by JAX (:class:`LocalLM`, the ``grounding[llm]`` extra), its
  compiled programs in the package's bounded registry (:mod:`grounding.programs`).
"""

from grounding.language.encoders import (
    EmbeddingCache,
    Encoder,
    HashingEncoder,
    SentenceTransformerEncoder,
    checked_embeddings,
    default_encoder,
    get_encoder,
)
from grounding.language.endpoint import (
    Endpoint,
    EndpointError,
    HTTPStatusError,
    json_content,
    message_content,
)
from grounding.language.lexical import BM25, tokenize
from grounding.language.linking import AnswerLinker, Mention, normalize_answer, surface_forms
from grounding.language.local import LocalLM, default_gguf_path
from grounding.language.phrases import PhraseIndex, PhraseMention, label_phrases, learned_phrases

__all__ = [
    # words
    "tokenize",
    "BM25",
    # vectors
    "Encoder",
    "HashingEncoder",
    "SentenceTransformerEncoder",
    "default_encoder",
    "get_encoder",
    "EmbeddingCache",
    "checked_embeddings",
    # names
    "AnswerLinker",
    "Mention",
    "normalize_answer",
    "surface_forms",
    # phrases
    "PhraseIndex",
    "PhraseMention",
    "label_phrases",
    "learned_phrases",
    # language models
    "Endpoint",
    "EndpointError",
    "HTTPStatusError",
    "json_content",
    "message_content",
    "LocalLM",
    "default_gguf_path",
]
