"""The Python client of the workgraph API (the standard library only; Python 3.9+).

    from workgraph_client import Client, LeaseLost

    agent = Client("http://127.0.0.1:8080", token)
    claim = agent.claim("default", "agent-1", lease_seconds=300, wait_seconds=30)
    if claim is not None:
        lease = claim["lease"]
        try:
            agent.heartbeat(lease["id"], lease["epoch"], progress={"step": 1})
            agent.complete(lease["id"], lease["epoch"], {"pr": 42})
        except LeaseLost:
            pass  # the item is someone else's now: stop working on it

The paths, problem codes and response types come from api/openapi.json
(``workgraph_client.spec``, generated: ``make clients``); ``Client.request``
calls any operation of the document by its operationId.
"""

from . import spec
from .client import Client, Retry, entry_error
from .errors import (
    Conflict,
    ConflictingResult,
    Blocked,
    Forbidden,
    LeaseLost,
    NotFound,
    RateLimited,
    TransportError,
    Unauthenticated,
    Unavailable,
    WorkgraphError,
    parse_retry_after,
)

__all__ = [
    "Client",
    "Conflict",
    "ConflictingResult",
    "Blocked",
    "Forbidden",
    "LeaseLost",
    "NotFound",
    "RateLimited",
    "Retry",
    "TransportError",
    "Unauthenticated",
    "Unavailable",
    "WorkgraphError",
    "entry_error",
    "parse_retry_after",
    "spec",
]
