/**
 * Offline tests of the client (a scripted fetch, no server): problem
 * decoding, Retry-After, and which calls are retried with which
 * Idempotency-Key. Run by clients/clients_test.go (node --test).
 */
import assert from "node:assert/strict";
import { test } from "node:test";

import { WorkgraphClient, WorkgraphError, parseRetryAfter } from "../src/index.js";

type Answer = Response | "unreachable";

/** scripted returns a fetch answering the scripted answers in order, and the requests it saw. */
function scripted(answers: Answer[]): { fetch: (r: Request) => Promise<Response>; seen: Request[] } {
  const seen: Request[] = [];
  return {
    seen,
    fetch: async (r: Request) => {
      seen.push(r);
      const a = answers.shift();
      if (a === undefined) {
        throw new Error("no scripted answer left");
      }
      if (a === "unreachable") {
        throw new TypeError("fetch failed");
      }
      return a;
    },
  };
}

function problem(status: number, code: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ type: "about:blank", title: code, status, detail: `a ${code}`, code, request_id: "req-1" }), {
    status,
    headers: { "Content-Type": "application/problem+json", ...headers },
  });
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
}

const claimBody = { lease: { id: "l", epoch: 1 }, item: { id: "i" }, attention: [], fence_token: "f" };

function client(answers: Answer[], attempts = 4) {
  const s = scripted(answers);
  return { c: new WorkgraphClient({ baseUrl: "http://wg.invalid/", token: "t", fetch: s.fetch, attempts }), seen: s.seen };
}

test("a retried claim keeps its Idempotency-Key", async () => {
  const { c, seen } = client([problem(503, "unavailable", { "Retry-After": "0" }), "unreachable", json(201, claimBody)]);
  const claim = await c.claim("p", { worker: "w" });
  assert.equal(claim?.lease.epoch, 1);
  const keys = seen.map((r) => r.headers.get("Idempotency-Key"));
  assert.equal(keys.length, 3);
  assert.ok(keys[0]);
  assert.deepEqual(new Set(keys).size, 1);
  assert.equal(seen[0]!.url, "http://wg.invalid/v1/projects/p/claims");
  assert.equal(seen[0]!.headers.get("Authorization"), "Bearer t");
});

test("a claim that finds nothing is null", async () => {
  const { c } = client([new Response(null, { status: 204 })]);
  assert.equal(await c.claim("p", { worker: "w", wait_seconds: 0 }), null);
});

test("heartbeat and complete send no key unless given one", async () => {
  const { c, seen } = client([
    json(200, { lease: {}, expires_at: "", stop_requested: false, answers: [], fence_token: "" }),
    json(200, { lease: {}, item: {}, replayed: false }),
    json(200, { lease: {}, item: {}, replayed: true }),
  ]);
  await c.heartbeat("l", { epoch: 1 });
  await c.complete("l", { epoch: 1 });
  await c.complete("l", { epoch: 1 }, { idempotencyKey: "k" });
  assert.deepEqual(
    seen.map((r) => r.headers.get("Idempotency-Key")),
    [null, null, "k"],
  );
  assert.deepEqual(JSON.parse(await seen[1]!.text()), { epoch: 1, result: null });
});

test("a refusal is not retried and carries its problem", async () => {
  const { c, seen } = client([problem(409, "lease_lost"), json(200, {})]);
  await assert.rejects(c.heartbeat("l", { epoch: 1 }), (e: unknown) => {
    assert.ok(e instanceof WorkgraphError);
    assert.equal(e.code, "lease_lost");
    assert.equal(e.status, 409);
    assert.equal(e.requestId, "req-1");
    assert.equal(e.request, "POST /v1/leases/{id}/heartbeat");
    return true;
  });
  assert.equal(seen.length, 1);
});

test("an answer that is no problem gets the code of its status", async () => {
  const { c } = client([new Response("<html>bad gateway</html>", { status: 502, headers: { "Retry-After": "2", "X-Request-Id": "r2" } })], 1);
  await assert.rejects(c.getLease("l"), (e: unknown) => {
    assert.ok(e instanceof WorkgraphError);
    assert.equal(e.code, "unavailable");
    assert.equal(e.retryAfter, 2);
    assert.equal(e.requestId, "r2");
    return true;
  });
});

test("the client gives up after its attempts", async () => {
  const { c, seen } = client(["unreachable", "unreachable"], 2);
  await assert.rejects(c.getLease("l"), TypeError);
  assert.equal(seen.length, 2);
});

test("Retry-After: seconds or an HTTP date", () => {
  const now = Date.UTC(2026, 0, 1);
  assert.equal(parseRetryAfter("5", now), 5);
  assert.equal(parseRetryAfter(new Date(now + 7000).toUTCString(), now), 7);
  assert.equal(parseRetryAfter("soon", now), undefined);
  assert.equal(parseRetryAfter(null, now), undefined);
});
