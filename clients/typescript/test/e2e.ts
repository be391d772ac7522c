/**
 * The client's end-to-end test against a real server (run by the Go test
 * clients/clients_test.go, or by hand: `npm run e2e` with the variables
 * below set). The project must have no ready item but the one this script
 * creates.
 *
 *   WORKGRAPH_URL          the server
 *   WORKGRAPH_PROJECT      a project of its own
 *   WORKGRAPH_AGENT_TOKEN  an agent token of the project
 *   WORKGRAPH_HUMAN_TOKEN  a human token of the project
 *
 * One full cycle: claim -> heartbeat -> ask (blocking) -> the person
 * answers -> claim again (the answer in the claim) -> complete (with an
 * Idempotency-Key, then its replay); a release and a failure of a second
 * item; a batch claimed, renewed and completed (a stale entry refused on
 * its own); and the error codes: a stale epoch is lease_lost, an agent
 * answering is forbidden, a bad token unauthenticated.
 */
import assert from "node:assert/strict";

import { WorkgraphClient, WorkgraphError, entryError, isProblem } from "../src/index.js";

function env(name: string): string {
  const v = process.env[name];
  if (!v) {
    throw new Error(`${name} is not set`);
  }
  return v;
}

async function refusal(call: Promise<unknown>): Promise<WorkgraphError> {
  try {
    await call;
  } catch (e) {
    assert.ok(e instanceof WorkgraphError, `not a WorkgraphError: ${String(e)}`);
    return e;
  }
  assert.fail("the call succeeded; a refusal was expected");
}

function at<T>(xs: T[], i: number): T {
  const x = xs[i];
  assert.ok(x !== undefined, `no entry ${i} of ${xs.length}`);
  return x;
}

async function main(): Promise<void> {
  const baseUrl = env("WORKGRAPH_URL");
  const project = env("WORKGRAPH_PROJECT");
  const agent = new WorkgraphClient({ baseUrl, token: env("WORKGRAPH_AGENT_TOKEN") });
  const human = new WorkgraphClient({ baseUrl, token: env("WORKGRAPH_HUMAN_TOKEN") });

  const item = await agent.createItem(project, { title: "typescript e2e", labels: ["e2e"] });
  assert.equal(item.state, "ready");

  // claim -> heartbeat
  const first = await agent.claim(project, { worker: "ts-1", lease_seconds: 60, labels: ["e2e"] });
  assert.ok(first, "nothing to claim");
  assert.equal(first.item.id, item.id);
  assert.equal(first.lease.epoch, 1);
  assert.ok(first.fence_token.length > 0, "no fence token");
  const hb = await agent.heartbeat(first.lease.id, { epoch: first.lease.epoch, progress: { step: 1 } });
  assert.equal(hb.stop_requested, false);
  assert.equal(hb.lease.heartbeats, 1);

  // ask (blocking): the lease ends, the item waits for the person
  const asked = await agent.ask(first.lease.id, {
    epoch: first.lease.epoch,
    question: "Postgres or SQLite?",
    suggested_answers: ["Postgres", "SQLite"],
  });
  assert.equal(asked.lease.outcome, "attention_requested");
  assert.equal((await agent.getItem(project, item.id)).state, "attention");
  assert.equal(await agent.claim(project, { worker: "ts-1", labels: ["e2e"] }), null, "claimed an item waiting for a person");

  // the stale lease is refused, with its code, status and request id
  const lost = await refusal(agent.heartbeat(first.lease.id, { epoch: first.lease.epoch }));
  assert.equal(lost.code, "lease_lost");
  assert.equal(lost.status, 409);
  assert.ok(lost.requestId.length > 0, "no request id");
  assert.ok(isProblem(lost, "lease_lost"));

  // the person sees the question and answers it; an agent may not
  const open = await human.listAttention(project, { state: "open", item_id: item.id });
  assert.equal(open.attention.length, 1);
  const question = open.attention[0]!;
  assert.equal(question.id, asked.attention.id);
  assert.equal(question.question, "Postgres or SQLite?");
  assert.equal((await refusal(agent.answer(question.id, "SQLite"))).code, "forbidden");
  const answered = await human.answer(question.id, "Postgres");
  assert.equal(answered.state, "resolved");
  assert.equal((await refusal(human.answer(question.id, "again"))).code, "conflict");

  // claim again: a new epoch, and the answer travels with the claim
  const second = await agent.claim(project, { worker: "ts-1", lease_seconds: 60, labels: ["e2e"] });
  assert.ok(second, "the answered item was not claimable");
  assert.equal(second.item.id, item.id);
  assert.equal(second.lease.epoch, 2);
  assert.deepEqual(
    second.attention.map((a) => [a.question, a.answer]),
    [["Postgres or SQLite?", "Postgres"]],
  );
  const stale = await refusal(agent.complete(second.lease.id, { epoch: first.lease.epoch, result: { db: "stale" } }));
  assert.equal(stale.code, "lease_lost");

  // complete with an Idempotency-Key; the retry with the same key is a replay
  const key = `ts-e2e-${second.lease.id}`;
  const done = await agent.complete(second.lease.id, { epoch: second.lease.epoch, result: { db: "Postgres" } }, { idempotencyKey: key });
  assert.equal(done.item.state, "done");
  assert.equal(done.lease.outcome, "completed");
  assert.deepEqual(done.item.result, { db: "Postgres" });
  const again = await agent.complete(second.lease.id, { epoch: second.lease.epoch, result: { db: "Postgres" } }, { idempotencyKey: key });
  assert.equal(again.lease.id, done.lease.id);
  assert.equal((await refusal(agent.complete(second.lease.id, { epoch: second.lease.epoch, result: { db: "other" } }))).code, "conflicting_result");

  // release hands an item back at once; fail sends it back after a backoff
  const other = await agent.createItem(project, { title: "typescript e2e: release and fail", labels: ["e2e"] });
  const third = await agent.claim(project, { worker: "ts-1", labels: ["e2e"] });
  assert.equal(third?.item.id, other.id);
  const released = await agent.release(third.lease.id, { epoch: third.lease.epoch, reason: "shutting down" });
  assert.equal(released.lease.outcome, "released");
  assert.equal(released.item.state, "ready");
  const fourth = await agent.claim(project, { worker: "ts-1", labels: ["e2e"] });
  assert.equal(fourth?.item.id, other.id);
  const failed = await agent.fail(fourth.lease.id, { epoch: fourth.lease.epoch, error: "tests fail", details: { exit: 1 } });
  assert.equal(failed.lease.outcome, "failed");
  assert.ok(failed.retry_after, "no retry_after after a failure");
  assert.equal((await refusal(agent.release(fourth.lease.id, { epoch: fourth.lease.epoch }))).code, "lease_lost");

  // batches: three leases in one claim, renewed and completed in one call
  // each; an entry with a stale epoch refuses itself only
  for (let i = 0; i < 3; i++) {
    await agent.createItem(project, { title: `typescript e2e: batch ${i}`, labels: ["e2e-batch"] });
  }
  const batch = await agent.claimBatch(project, { worker: "ts-2", lease_seconds: 60, labels: ["e2e-batch"] }, 10);
  assert.equal(batch.length, 3);
  const beats = await agent.heartbeatBatch(project, [
    { lease_id: at(batch, 0).lease.id, epoch: at(batch, 0).lease.epoch, progress: { step: 1 } },
    { lease_id: at(batch, 1).lease.id, epoch: at(batch, 1).lease.epoch + 1 },
  ]);
  assert.deepEqual(beats.map((b) => b.status), [200, 409]);
  assert.equal(at(beats, 0).heartbeat?.lease.heartbeats, 1);
  assert.equal(entryError("heartbeat", at(beats, 0)), undefined);
  assert.equal(entryError("heartbeat", at(beats, 1))?.code, "lease_lost");
  const completions = await agent.completeBatch(project, [
    { lease_id: at(batch, 0).lease.id, epoch: at(batch, 0).lease.epoch, result: { n: 0 } },
    { lease_id: at(batch, 1).lease.id, epoch: at(batch, 1).lease.epoch + 1, result: { n: 1 } },
    { lease_id: at(batch, 2).lease.id, epoch: at(batch, 2).lease.epoch },
  ]);
  assert.deepEqual(completions.map((c) => c.status), [200, 409, 200]);
  assert.equal(at(completions, 0).completion?.item.state, "done");
  assert.equal(entryError("complete", at(completions, 1))?.code, "lease_lost");
  const rest = await agent.completeBatch(project, [{ lease_id: at(batch, 1).lease.id, epoch: at(batch, 1).lease.epoch }]);
  assert.equal(at(rest, 0).completion?.lease.outcome, "completed");

  // a bad token
  const stranger = new WorkgraphClient({ baseUrl, token: "wg_not_a_token", attempts: 1 });
  const unauth = await refusal(stranger.listAttention(project));
  assert.equal(unauth.code, "unauthenticated");
  assert.equal(unauth.status, 401);

  console.log("typescript e2e: ok");
}

main().catch((e: unknown) => {
  console.error("typescript e2e: FAIL:", e);
  process.exit(1);
});
