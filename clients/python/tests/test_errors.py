"""Offline tests of the client's error decoding and retries (python3 -m unittest discover -s tests)."""

import email.utils
import io
import unittest
import urllib.error
import urllib.request
from email.message import Message

from workgraph_client import Client, LeaseLost, TransportError, Unavailable, WorkgraphError, parse_retry_after
from workgraph_client.client import _UNSET
from workgraph_client.errors import problem_error


def headers(**kv):
    m = Message()
    for k, v in kv.items():
        m[k.replace("_", "-")] = v
    return m


class ProblemTest(unittest.TestCase):
    def test_problem_document(self):
        body = b'{"type": "https://workgraph.dev/problems/lease_lost", "title": "Lease lost", "status": 409,' \
               b' "detail": "the lease has ended", "code": "lease_lost", "request_id": "req-1"}'
        e = problem_error("POST", "/v1/leases/x/heartbeat", 409, body, headers())
        self.assertIsInstance(e, LeaseLost)
        self.assertEqual((e.code, e.status, e.request_id, e.retry_after), ("lease_lost", 409, "req-1", None))

    def test_not_a_problem(self):
        e = problem_error("GET", "/v1/x", 502, b"<html>bad gateway</html>", headers(X_Request_Id="r2", Retry_After="3"))
        self.assertIsInstance(e, Unavailable)
        self.assertEqual((e.code, e.request_id, e.retry_after), ("unavailable", "r2", 3.0))

    def test_unknown_code_is_a_plain_error(self):
        e = problem_error("GET", "/v1/x", 400, b'{"code": "invalid_argument", "field": "epoch"}', headers())
        self.assertIs(type(e), WorkgraphError)
        self.assertEqual(e.field, "epoch")

    def test_retry_after(self):
        now = 1_700_000_000.0
        self.assertEqual(parse_retry_after("5", now), 5.0)
        self.assertAlmostEqual(parse_retry_after(email.utils.formatdate(now + 7, usegmt=True), now), 7.0)
        self.assertIsNone(parse_retry_after("soon", now))
        self.assertIsNone(parse_retry_after(None, now))


class Scripted(urllib.request.BaseHandler):
    """Answers each request with the next scripted (status, body, headers), recording the requests."""

    handler_order = 100  # before the real HTTPHandler

    def __init__(self, answers):
        self.answers = list(answers)
        self.requests = []

    def http_open(self, req):
        self.requests.append(req)
        status, body, hdrs = self.answers.pop(0)
        if status is None:
            raise urllib.error.URLError("connection refused")
        resp = urllib.request.addinfourl(io.BytesIO(body), hdrs, req.full_url, status)
        resp.msg = "scripted"
        return resp


def client(answers, **kw):
    handler = Scripted(answers)
    opener = urllib.request.build_opener(handler)
    return Client("http://wg.invalid", "t", opener=opener, **kw), handler


UNAVAILABLE = (503, b'{"code": "unavailable", "status": 503, "title": "", "detail": "", "type": ""}', headers(Retry_After="0"))
CLAIM = (201, b'{"lease": {"id": "l", "epoch": 1}, "item": {}, "attention": [], "fence_token": "f"}', headers())


class RetryTest(unittest.TestCase):
    def test_retry_keeps_the_idempotency_key(self):
        c, h = client([UNAVAILABLE, (None, b"", None), CLAIM])
        claim = c.claim("p", "w")
        self.assertEqual(claim["lease"]["epoch"], 1)
        keys = [r.get_header("Idempotency-key") for r in h.requests]
        self.assertEqual(len(keys), 3)
        self.assertTrue(keys[0])
        self.assertEqual(len(set(keys)), 1, keys)

    def test_every_write_keeps_a_key(self):
        # A PATCH, PUT or DELETE retried after a lost answer must be
        # answered from its first attempt (the server keeps every write's
        # key), not applied again; a GET carries none.
        for method, op, params in [
            ("PATCH", "updateItem", {"project": "p", "id": "i"}),
            ("PUT", "setBudget", {"project": "p", "id": "i"}),
            ("DELETE", "removeDependency", {"project": "p", "id": "i", "depends_on": "j"}),
            ("GET", "getItem", {"project": "p", "id": "i"}),
        ]:
            c, h = client([(None, b"", None), (200, b"{}", headers())])
            body = {} if method in ("PATCH", "PUT") else _UNSET
            c.request(op, params, body=body)
            keys = [r.get_header("Idempotency-key") for r in h.requests]
            self.assertEqual([r.get_method() for r in h.requests], [method, method])
            if method == "GET":
                self.assertEqual(keys, [None, None])
            else:
                self.assertTrue(keys[0], method)
                self.assertEqual(keys[0], keys[1], method)

    def test_heartbeat_sends_no_key(self):
        c, h = client([(200, b'{"lease": {}, "expires_at": "", "stop_requested": false, "answers": []}', headers())])
        c.heartbeat("l", 1)
        self.assertIsNone(h.requests[0].get_header("Idempotency-key"))

    def test_refusal_is_not_retried(self):
        c, h = client([(409, b'{"code": "lease_lost"}', headers()), CLAIM])
        with self.assertRaises(LeaseLost):
            c.complete("l", 1, {"x": 1})
        self.assertEqual(len(h.requests), 1)

    def test_gives_up_after_its_attempts(self):
        c, h = client([(None, b"", None)] * 2, attempts=2)
        with self.assertRaises(TransportError):
            c.get_lease("l")
        self.assertEqual(len(h.requests), 2)

    def test_nothing_ready(self):
        c, _ = client([(204, b"", headers())])
        self.assertIsNone(c.claim("p", "w", wait_seconds=0))


if __name__ == "__main__":
    unittest.main()
