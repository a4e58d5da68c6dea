"""Language models over HTTP: one OpenAI-compatible endpoint that every client of the package
(candidate model, planner, relevance refiner, community summarizer) talks through.

See :class:`Endpoint` for what a request guarantees against a misbehaving server.
"""

from grounding.llm.endpoint import (
    Endpoint,
    EndpointError,
    HTTPStatusError,
    json_content,
    message_content,
)

__all__ = ["Endpoint", "EndpointError", "HTTPStatusError", "json_content", "message_content"]
