"""The errors of the workgraph client."""

from __future__ import annotations

import email.utils
import time
from typing import Any, Dict, Mapping, Optional, Type

from . import spec as _spec


class WorkgraphError(Exception):
    """A request the server refused or failed: an RFC 9457 problem.

    ``code`` is the problem's machine-readable kind (one of
    ``workgraph_client.spec.PROBLEM_CODES``: ``lease_lost`` means stop working on the item
    at once); ``status`` the HTTP status; ``retry_after`` the seconds the
    server asked to wait before a retry (``None`` if it gave none);
    ``request_id`` the id to quote in a bug report; ``problem`` the whole
    document, with the members of its code (``field``, ``cycle``,
    ``lease_id``, ...).
    """

    def __init__(
        self,
        method: str,
        path: str,
        status: int,
        problem: Dict[str, Any],
        retry_after: Optional[float] = None,
        request_id: str = "",
    ) -> None:
        self.method = method
        self.path = path
        self.status = status
        self.problem = problem
        self.code: str = problem.get("code") or code_for_status(status)
        self.title: str = problem.get("title") or ""
        self.detail: str = problem.get("detail") or ""
        self.type: str = problem.get("type") or "about:blank"
        self.retry_after = retry_after
        self.request_id: str = problem.get("request_id") or request_id
        super().__init__(
            "%s (%s, HTTP %d; %s %s)" % (self.detail or self.title or self.code, self.code, status, method, path)
        )

    @property
    def field(self) -> Optional[str]:
        """The input field at fault (``invalid_argument``), if the problem names one."""
        return self.problem.get("field")


class LeaseLost(WorkgraphError):
    """409 ``lease_lost``: the lease expired, ended or was taken over. Stop working on the item."""


class ConflictingResult(WorkgraphError):
    """409 ``conflicting_result``: the item was completed with another result (the first stands)."""


class Blocked(WorkgraphError):
    """409 ``blocked``: the item gained a dependency or an open child while it was leased; nothing changed and the lease is still held (``problem["dependencies"]``, ``problem["children"]``)."""


class Conflict(WorkgraphError):
    """409 ``conflict``: a stale version, a finished item or request, or an Idempotency-Key reused for another request."""


class Unauthenticated(WorkgraphError):
    """401 ``unauthenticated``: a missing, unknown or revoked token."""


class Forbidden(WorkgraphError):
    """403 ``forbidden``: the token's role may not do this."""


class NotFound(WorkgraphError):
    """404 ``not_found``: no such thing (or it belongs to another project)."""


class RateLimited(WorkgraphError):
    """429 ``rate_limited``: retry after ``retry_after`` seconds."""


class Unavailable(WorkgraphError):
    """503 ``unavailable``: the server or its database is unavailable; retry after ``retry_after``."""


class TransportError(Exception):
    """The server could not be reached, or the connection broke before an answer (after the client's retries)."""


_BY_CODE: Dict[str, Type[WorkgraphError]] = {
    "lease_lost": LeaseLost,
    "conflicting_result": ConflictingResult,
    "blocked": Blocked,
    "conflict": Conflict,
    "unauthenticated": Unauthenticated,
    "forbidden": Forbidden,
    "not_found": NotFound,
    "rate_limited": RateLimited,
    "unavailable": Unavailable,
}

_STATUS_CODES = {
    400: "invalid_argument",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    431: "header_too_large",
    429: "rate_limited",
    502: "unavailable",
    503: "unavailable",
    504: "unavailable",
}

for _code in list(_BY_CODE) + list(_STATUS_CODES.values()):
    if _code not in _spec.PROBLEM_CODES:
        raise ImportError("workgraph_client: the problem code %r is gone from the OpenAPI document" % _code)


def code_for_status(status: int) -> str:
    """The problem code an answer without a problem document stands for (a proxy's 502 page)."""
    return _STATUS_CODES.get(status, "internal")


def problem_error(
    method: str, path: str, status: int, body: bytes, headers: Mapping[str, str], now: Optional[float] = None
) -> WorkgraphError:
    """The WorkgraphError of an error answer (its body and headers), of the subclass of its code."""
    import json

    problem: Dict[str, Any] = {}
    try:
        decoded = json.loads(body.decode("utf-8")) if body else None
        if isinstance(decoded, dict) and isinstance(decoded.get("code"), str):
            problem = decoded
    except (ValueError, UnicodeDecodeError):
        pass
    if not problem:
        problem = {"type": "about:blank", "title": "HTTP %d" % status, "status": status,
                   "detail": body[:200].decode("utf-8", "replace"), "code": code_for_status(status)}
    cls = _BY_CODE.get(problem["code"], WorkgraphError)
    return cls(
        method,
        path,
        status,
        problem,
        retry_after=parse_retry_after(headers.get("Retry-After"), time.time() if now is None else now),
        request_id=headers.get("X-Request-Id") or "",
    )


def parse_retry_after(value: Optional[str], now: float) -> Optional[float]:
    """A Retry-After header in seconds: delay-seconds or an HTTP date (relative to now); None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - now)
