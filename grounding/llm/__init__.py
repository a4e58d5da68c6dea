"""Language models: over HTTP, one OpenAI-compatible endpoint that every client of the package
(candidate model, planner, relevance refiner, community summarizer) talks through; in-process,
a small GGUF model evaluated by JAX (:class:`LocalLM`, the ``grounding[llm]`` extra).

See :class:`Endpoint` for what a request guarantees against a misbehaving server.
"""

from grounding.llm.endpoint import (
    Endpoint,
    EndpointError,
    HTTPStatusError,
    json_content,
    message_content,
)
from grounding.llm.local import LocalLM, default_gguf_path

__all__ = [
    "Endpoint",
    "EndpointError",
    "HTTPStatusError",
    "LocalLM",
    "default_gguf_path",
    "json_content",
    "message_content",
]
