"""The workgraph client: one server, one token, the standard library only."""

from __future__ import annotations

import json
import random
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple, cast

from . import spec as _spec
from .errors import TransportError, WorkgraphError, problem_error

__all__ = ["Client", "Retry", "entry_error"]

# The operations and fields this module relies on, checked against the
# generated spec at import: a change of the OpenAPI document that this
# client does not follow fails its import (and so its tests) instead of
# a request in production.
_USES: Dict[str, Tuple[str, ...]] = {
    "Claim": ("lease", "item", "attention", "fence_token"),
    "Lease": ("id", "epoch", "outcome", "expires_at"),
    "ClaimRequest": ("worker", "lease_seconds", "wait_seconds", "labels"),
    "HeartbeatRequest": ("epoch", "progress", "lease_seconds", "worker_time"),
    "CompleteRequest": ("epoch", "result", "worker_time"),
    "ReleaseRequest": ("epoch", "reason"),
    "FailRequest": ("epoch", "error", "details", "worker_time"),
    "AskRequest": ("epoch", "question", "suggested_answers", "context", "blocking"),
    "ResolveRequest": ("answer", "decision", "result", "note"),
    "DismissRequest": ("note",),
    "AttentionPage": ("attention", "next_cursor"),
    "ClaimBatch": ("claims",),
    "CompletionEntry": ("lease_id", "epoch", "result"),
    "CompletionAnswer": ("lease_id", "status", "completion", "problem"),
    "HeartbeatEntry": ("lease_id", "epoch", "progress", "lease_seconds"),
    "HeartbeatAnswer": ("lease_id", "status", "heartbeat", "problem"),
    "Problem": ("code", "status", "detail", "title", "type", "request_id", "field"),
}
_OPERATIONS = (
    "claim", "heartbeat", "complete", "release", "fail", "ask", "listAttention", "getAttention",
    "resolveAttention", "dismissAttention", "createItem", "getItem", "getLease",
    "completeBatch", "heartbeatBatch",
)


def _check_spec() -> None:
    for name in _OPERATIONS:
        if name not in _spec.OPERATIONS:
            raise ImportError("workgraph_client: the operation %r is gone from the OpenAPI document" % name)
    for schema, fields in _USES.items():
        missing = [f for f in fields if f not in _spec.FIELDS.get(schema, ())]
        if missing:
            raise ImportError("workgraph_client: %s has no %s in the OpenAPI document" % (schema, ", ".join(missing)))


_check_spec()

_UNSET: Any = object()
_RETRY_BASE = 0.1
_RETRY_CAP = 5.0
_RETRIED_STATUSES = (429, 502, 503, 504)


class Retry:
    """A retry the client is about to make (for the on_retry hook)."""

    def __init__(self, method: str, path: str, attempt: int, wait: float, error: Exception) -> None:
        self.method, self.path, self.attempt, self.wait, self.error = method, path, attempt, wait, error

    def __repr__(self) -> str:
        return "Retry(%s %s, attempt %d, wait %.2fs: %s)" % (self.method, self.path, self.attempt, self.wait, self.error)


class Client:
    """A client of one workgraph server with one token.

    Every method returns the answer's JSON (typed by the TypedDicts of
    ``workgraph_client.spec``) or raises a WorkgraphError (the server
    refused: ``LeaseLost``, ``Conflict``, ...) or a TransportError. Calls
    that are safe to retry are retried on transport failures, 429, 502, 503,
    504 and 409 ``request_in_progress``, after the larger of a jittered
    backoff and the server's Retry-After, within ``attempts`` and
    ``retry_budget`` seconds. Every write but heartbeat and complete (which
    are safe to repeat as they are: fenced by the epoch, an identical
    completion is a replay) carries an Idempotency-Key, fresh per call and
    kept by its retries, so a retry never applies twice; pass
    ``idempotency_key`` to choose it (to retry across restarts of your
    program). The default opener honours the environment's proxies
    (``https_proxy``, ``http_proxy``, ``no_proxy``); pass ``opener`` to
    choose otherwise (TLS contexts, proxies, handlers).
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 30.0,
        attempts: int = 10,
        retry_budget: float = 30.0,
        user_agent: str = "workgraph-python/0.1",
        on_retry: Optional[Callable[[Retry], None]] = None,
        opener: Optional[urllib.request.OpenerDirector] = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._token = token
        self.timeout = timeout
        self.attempts = max(1, attempts)
        self.retry_budget = retry_budget
        self.user_agent = user_agent
        self.on_retry = on_retry
        self._opener = opener or urllib.request.build_opener()

    # The work cycle (agent tokens).

    def claim(
        self,
        project: str,
        worker: str,
        *,
        lease_seconds: Optional[int] = None,
        wait_seconds: Optional[int] = None,
        labels: Optional[List[str]] = None,
        capabilities: Optional[List[str]] = None,
        idempotency_key: Optional[str] = None,
    ) -> Optional[_spec.Claim]:
        """Claims the highest-priority ready item, waiting up to wait_seconds; None when nothing became ready.

        Only items carrying every one of ``labels`` and requiring none but
        ``capabilities`` are handed out. The lease's ``epoch`` must be
        presented by every later call on it.
        """
        body = _fields(
            worker=worker, lease_seconds=lease_seconds, wait_seconds=wait_seconds, labels=labels, capabilities=capabilities
        )
        status, out = self._call(
            "claim", {"project": project}, body=body, key=idempotency_key or _new_key(), extra_timeout=wait_seconds or 0
        )
        return None if status == 204 else cast(_spec.Claim, out)

    def heartbeat(
        self,
        lease_id: str,
        epoch: int,
        *,
        progress: Any = _UNSET,
        lease_seconds: Optional[int] = None,
        worker_time: Optional[str] = None,
    ) -> _spec.HeartbeatResult:
        """Extends the lease; LeaseLost when it expired, ended or was taken over (stop working on the item).

        The answer's ``stop_requested`` says a person asked the worker to
        stop; ``answers`` carries the answers of non-blocking questions.
        """
        body = _fields(epoch=epoch, lease_seconds=lease_seconds, worker_time=worker_time)
        if progress is not _UNSET:
            body["progress"] = progress
        return cast(_spec.HeartbeatResult, self._call("heartbeat", {"id": lease_id}, body=body)[1])

    def complete(
        self,
        lease_id: str,
        epoch: int,
        result: Any = None,
        *,
        worker_time: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> _spec.Completion:
        """Finishes the item with result (any JSON value).

        An identical repeat answers the first completion again
        (``replayed``); another result raises ConflictingResult; an item
        that gained unfinished work while leased raises Blocked (the lease is
        still held).
        """
        body = _fields(epoch=epoch, worker_time=worker_time)
        body["result"] = result
        return cast(_spec.Completion, self._call("complete", {"id": lease_id}, body=body, key=idempotency_key)[1])

    def claim_batch(
        self,
        project: str,
        worker: str,
        max_items: int,
        *,
        lease_seconds: Optional[int] = None,
        wait_seconds: Optional[int] = None,
        labels: Optional[List[str]] = None,
        capabilities: Optional[List[str]] = None,
        idempotency_key: Optional[str] = None,
    ) -> List[_spec.Claim]:
        """Claims up to max_items (1..100) ready items in one call, as claim claims one; [] when nothing became ready."""
        body = _fields(
            worker=worker, max_items=max_items, lease_seconds=lease_seconds, wait_seconds=wait_seconds,
            labels=labels, capabilities=capabilities,
        )
        status, out = self._call(
            "claim", {"project": project}, body=body, key=idempotency_key or _new_key(), extra_timeout=wait_seconds or 0
        )
        return [] if status == 204 else cast(_spec.ClaimBatch, out)["claims"]

    def heartbeat_batch(self, project: str, entries: List[_spec.HeartbeatEntry]) -> List[_spec.HeartbeatAnswer]:
        """Renews up to 100 leases of the project in one call: one answer per entry, in their order.

        Each entry is fenced on its own: a lost lease answers that entry's
        ``status`` 409 and its ``problem`` (``entry_error`` makes the error
        the single heartbeat would have raised); the others are renewed.
        """
        out = self._call("heartbeatBatch", {"project": project}, body=list(entries))[1]
        return cast(_spec.Heartbeats, out)["heartbeats"]

    def complete_batch(self, project: str, entries: List[_spec.CompletionEntry]) -> List[_spec.CompletionAnswer]:
        """Completes up to 100 leases of the project in one call: one answer per entry, in their order.

        Each entry is fenced on its own: a lost lease or a conflicting
        result refuses that entry only (see ``entry_error``). Safe to retry
        as it is: completed entries answer ``replayed``.
        """
        body = [dict(e, result=e.get("result")) for e in entries]
        out = self._call("completeBatch", {"project": project}, body=body)[1]
        return cast(_spec.Completions, out)["completions"]

    def release(self, lease_id: str, epoch: int, reason: Optional[str] = None, *, idempotency_key: Optional[str] = None) -> _spec.LeaseItem:
        """Hands the item back at once (it is ready again)."""
        body = _fields(epoch=epoch, reason=reason)
        return cast(_spec.LeaseItem, self._call("release", {"id": lease_id}, body=body, key=idempotency_key or _new_key())[1])

    def fail(
        self,
        lease_id: str,
        epoch: int,
        error: Any = None,
        *,
        details: Any = _UNSET,
        worker_time: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> _spec.FailResult:
        """Reports the attempt failed: the item returns after a backoff, or waits for a person after repeated failures.

        error is a message, or an object whose ``message`` is the message
        (then give no details).
        """
        body = _fields(epoch=epoch, error=error, worker_time=worker_time)
        if details is not _UNSET:
            body["details"] = details
        return cast(_spec.FailResult, self._call("fail", {"id": lease_id}, body=body, key=idempotency_key or _new_key())[1])

    def ask(
        self,
        lease_id: str,
        epoch: int,
        question: str,
        *,
        suggested_answers: Optional[List[str]] = None,
        context: Any = _UNSET,
        blocking: bool = True,
        idempotency_key: Optional[str] = None,
    ) -> _spec.AskResult:
        """Asks a person. A blocking question (the default) ends the lease as attention_requested.

        The item then waits for the answer, and its next claim carries the
        question and the answer (``attention``). A non-blocking one keeps the
        lease; the answer arrives in a later heartbeat's ``answers``.
        """
        body = _fields(epoch=epoch, question=question, suggested_answers=suggested_answers, blocking=blocking)
        if context is not _UNSET:
            body["context"] = context
        return cast(_spec.AskResult, self._call("ask", {"id": lease_id}, body=body, key=idempotency_key or _new_key())[1])

    # People's side (human or admin tokens) and reads.

    def list_attention(
        self,
        project: str,
        *,
        state: Optional[str] = None,
        item_id: Optional[str] = None,
        cursor: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> _spec.AttentionPage:
        """One page of the project's attention requests, oldest first (follow ``next_cursor``, or use iter_attention)."""
        query = _fields(state=state, item_id=item_id, cursor=cursor, limit=limit)
        return cast(_spec.AttentionPage, self._call("listAttention", {"project": project}, query=query)[1])

    def iter_attention(self, project: str, *, state: Optional[str] = None, item_id: Optional[str] = None) -> Iterator[_spec.AttentionRequest]:
        """Every attention request of the project that matches, oldest first, page after page."""
        cursor: Optional[str] = None
        while True:
            page = self.list_attention(project, state=state, item_id=item_id, cursor=cursor, limit=500)
            for a in page["attention"]:
                yield a
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def get_attention(self, attention_id: str) -> _spec.AttentionRequest:
        """One attention request (with the late reports of an uncertain outcome)."""
        return cast(_spec.AttentionRequest, self._call("getAttention", {"id": attention_id})[1])

    def answer(self, attention_id: str, answer: str, *, idempotency_key: Optional[str] = None) -> _spec.AttentionRequest:
        """Answers an open attention request (once: again raises Conflict; an agent token raises Forbidden)."""
        return self.resolve(attention_id, answer=answer, idempotency_key=idempotency_key)

    def resolve(
        self,
        attention_id: str,
        *,
        answer: Optional[str] = None,
        decision: Optional[str] = None,
        result: Any = _UNSET,
        note: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> _spec.AttentionRequest:
        """Resolves an attention request: with an answer, or a decision (retry, done with a result, cancel) for an uncertain outcome."""
        body = _fields(answer=answer, decision=decision, note=note)
        if result is not _UNSET:
            body["result"] = result
        return cast(
            _spec.AttentionRequest,
            self._call("resolveAttention", {"id": attention_id}, body=body, key=idempotency_key or _new_key())[1],
        )

    def dismiss(self, attention_id: str, note: Optional[str] = None, *, idempotency_key: Optional[str] = None) -> _spec.AttentionRequest:
        """Closes an attention request without an answer."""
        body = _fields(note=note)
        return cast(
            _spec.AttentionRequest,
            self._call("dismissAttention", {"id": attention_id}, body=body, key=idempotency_key or _new_key())[1],
        )

    def create_item(self, project: str, title: str, *, idempotency_key: Optional[str] = None, **fields: Any) -> _spec.Item:
        """Adds an item (fields: body, priority, parent_id, depends_on, labels, requires, touches, metadata, on_expiry)."""
        body = dict(fields, title=title)
        return cast(_spec.Item, self._call("createItem", {"project": project}, body=body, key=idempotency_key or _new_key())[1])

    def get_item(self, project: str, item_id: str) -> _spec.Item:
        """One item."""
        return cast(_spec.Item, self._call("getItem", {"project": project, "id": item_id})[1])

    def get_lease(self, lease_id: str) -> _spec.LeaseDetail:
        """One lease, with the late or stale reports about it."""
        return cast(_spec.LeaseDetail, self._call("getLease", {"id": lease_id})[1])

    # Any operation of the document.

    def request(
        self,
        operation_id: str,
        path_params: Optional[Mapping[str, str]] = None,
        *,
        query: Optional[Mapping[str, Any]] = None,
        body: Any = _UNSET,
        idempotency_key: Optional[str] = None,
    ) -> Tuple[int, Any]:
        """Calls any operation of the OpenAPI document by its operationId; returns (status, decoded JSON or None).

        A write (POST, PUT, PATCH, DELETE) gets a fresh Idempotency-Key unless one is given.
        """
        method, _ = _spec.OPERATIONS[operation_id]
        key = idempotency_key or (_new_key() if method != "GET" else None)
        return self._call(operation_id, path_params or {}, query=query, body=body, key=key)

    def _call(
        self,
        operation_id: str,
        path_params: Mapping[str, str],
        *,
        query: Optional[Mapping[str, Any]] = None,
        body: Any = _UNSET,
        key: Optional[str] = None,
        extra_timeout: float = 0,
    ) -> Tuple[int, Any]:
        method, template = _spec.OPERATIONS[operation_id]
        path = template
        for name, value in path_params.items():
            path = path.replace("{" + name + "}", urllib.parse.quote(str(value), safe=""))
        if "{" in path:
            raise ValueError("%s: missing path parameters in %s" % (operation_id, path))
        url = self.base_url + path
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None}, doseq=True)
        headers = {"Authorization": "Bearer " + self._token, "Accept": "application/json", "User-Agent": self.user_agent}
        data = None
        if body is not _UNSET:
            data = json.dumps(body, separators=(",", ":")).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if key is not None:
            headers["Idempotency-Key"] = key

        start = time.monotonic()
        attempt = 1
        while True:
            try:
                return self._attempt(method, path, url, data, headers, self.timeout + extra_timeout)
            except (WorkgraphError, TransportError) as err:
                if attempt >= self.attempts or not _retryable(err):
                    raise
                retry_after = err.retry_after if isinstance(err, WorkgraphError) else None
                wait = max(random.uniform(0, min(_RETRY_CAP, _RETRY_BASE * 2 ** min(attempt - 1, 20))), retry_after or 0)
                if time.monotonic() - start + wait > self.retry_budget + extra_timeout:
                    raise
                if self.on_retry is not None:
                    self.on_retry(Retry(method, path, attempt, wait, err))
                time.sleep(wait)
                attempt += 1

    def _attempt(
        self, method: str, path: str, url: str, data: Optional[bytes], headers: Dict[str, str], timeout: float
    ) -> Tuple[int, Any]:
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with self._opener.open(req, timeout=timeout) as resp:
                raw = resp.read()
                status = resp.status
        except urllib.error.HTTPError as e:
            try:
                raw = e.read()
            except OSError:
                raw = b""
            finally:
                e.close()
            raise problem_error(method, path, e.code, raw, e.headers) from None
        except (urllib.error.URLError, socket.timeout, ConnectionError, OSError) as e:
            raise TransportError("%s %s: %s" % (method, path, e)) from e
        if status == 204 or not raw:
            return status, None
        try:
            return status, json.loads(raw.decode("utf-8"))
        except ValueError as e:
            # Not retried: the request took effect.
            raise ValueError("%s %s: the answer (HTTP %d) is not JSON: %s" % (method, path, status, e)) from e


def _retryable(err: Exception) -> bool:
    if isinstance(err, TransportError):
        return True
    assert isinstance(err, WorkgraphError)
    return err.status in _RETRIED_STATUSES or err.code == "request_in_progress"


def _fields(**kv: Any) -> Dict[str, Any]:
    """The members that were given (not None)."""
    return {k: v for k, v in kv.items() if v is not None}


def _new_key() -> str:
    return uuid.uuid4().hex


def entry_error(operation: str, answer: Mapping[str, Any]) -> Optional[WorkgraphError]:
    """The error of one entry of a batch answer (heartbeat_batch, complete_batch), as the single call would raise it; None when the entry succeeded."""
    status = int(answer["status"])
    if 200 <= status < 300:
        return None
    body = json.dumps(answer.get("problem") or {}).encode("utf-8")
    return problem_error("POST", operation, status, body, {})
