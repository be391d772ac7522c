"""The Python client's end-to-end test against a real server.

Run by the Go test clients/clients_test.go, or by hand with PYTHONPATH=clients/python
and the variables below set. The project must have no ready item but the one
this script creates.

    WORKGRAPH_URL          the server
    WORKGRAPH_PROJECT      a project of its own
    WORKGRAPH_AGENT_TOKEN  an agent token of the project
    WORKGRAPH_HUMAN_TOKEN  a human token of the project

One full cycle: claim -> heartbeat -> ask (blocking) -> the person answers
-> claim again (the answer in the claim) -> complete (with an
Idempotency-Key, then its replay); a release and a failure of a second
item; a batch claimed, renewed and completed (a stale entry refused on
its own); and the error codes: a stale epoch is lease_lost, an agent answering
is forbidden, a bad token unauthenticated.
"""

import os
import sys

from workgraph_client import Client, ConflictingResult, Forbidden, LeaseLost, Unauthenticated, WorkgraphError, entry_error


def refusal(cls, call, *args, **kwargs):
    try:
        call(*args, **kwargs)
    except cls as e:
        return e
    raise AssertionError("%s succeeded; %s was expected" % (call.__name__, cls.__name__))


def main():
    base_url = os.environ["WORKGRAPH_URL"]
    project = os.environ["WORKGRAPH_PROJECT"]
    agent = Client(base_url, os.environ["WORKGRAPH_AGENT_TOKEN"])
    human = Client(base_url, os.environ["WORKGRAPH_HUMAN_TOKEN"])

    item = agent.create_item(project, "python e2e", labels=["e2e"])
    assert item["state"] == "ready", item

    # claim -> heartbeat
    first = agent.claim(project, "py-1", lease_seconds=60, labels=["e2e"])
    assert first is not None, "nothing to claim"
    lease = first["lease"]
    assert first["item"]["id"] == item["id"]
    assert lease["epoch"] == 1, lease
    assert first["fence_token"], "no fence token"
    hb = agent.heartbeat(lease["id"], lease["epoch"], progress={"step": 1})
    assert hb["stop_requested"] is False
    assert hb["lease"]["heartbeats"] == 1, hb["lease"]

    # ask (blocking): the lease ends, the item waits for the person
    asked = agent.ask(lease["id"], lease["epoch"], "Postgres or SQLite?", suggested_answers=["Postgres", "SQLite"])
    assert asked["lease"]["outcome"] == "attention_requested", asked["lease"]
    assert agent.get_item(project, item["id"])["state"] == "attention"
    assert agent.claim(project, "py-1", labels=["e2e"]) is None, "claimed an item waiting for a person"

    # the stale lease is refused, with its code, status and request id
    lost = refusal(LeaseLost, agent.heartbeat, lease["id"], lease["epoch"])
    assert lost.code == "lease_lost" and lost.status == 409, (lost.code, lost.status)
    assert lost.request_id, "no request id"
    assert isinstance(lost, WorkgraphError)

    # the person sees the question and answers it; an agent may not
    page = human.list_attention(project, state="open", item_id=item["id"])
    assert len(page["attention"]) == 1, page
    question = page["attention"][0]
    assert question["id"] == asked["attention"]["id"]
    assert [a["id"] for a in human.iter_attention(project, state="open")] == [question["id"]]
    assert refusal(Forbidden, agent.answer, question["id"], "SQLite").code == "forbidden"
    answered = human.answer(question["id"], "Postgres")
    assert answered["state"] == "resolved", answered
    assert refusal(WorkgraphError, human.answer, question["id"], "again").code == "conflict"

    # claim again: a new epoch, and the answer travels with the claim
    second = agent.claim(project, "py-1", lease_seconds=60, labels=["e2e"], idempotency_key="py-e2e-claim-2")
    assert second is not None, "the answered item was not claimable"
    lease2 = second["lease"]
    assert second["item"]["id"] == item["id"]
    assert lease2["epoch"] == 2, lease2
    assert [(a["question"], a["answer"]) for a in second["attention"]] == [("Postgres or SQLite?", "Postgres")]
    # the claim's retry with its key is answered with the same lease
    again = agent.claim(project, "py-1", lease_seconds=60, labels=["e2e"], idempotency_key="py-e2e-claim-2")
    assert again is not None and again["lease"]["id"] == lease2["id"], again
    assert refusal(LeaseLost, agent.complete, lease2["id"], lease["epoch"], {"db": "stale"}).code == "lease_lost"

    # complete with an Idempotency-Key; the retry with the same key is a replay
    key = "py-e2e-" + lease2["id"]
    done = agent.complete(lease2["id"], lease2["epoch"], {"db": "Postgres"}, idempotency_key=key)
    assert done["item"]["state"] == "done", done["item"]
    assert done["lease"]["outcome"] == "completed"
    assert done["item"]["result"] == {"db": "Postgres"}
    replay = agent.complete(lease2["id"], lease2["epoch"], {"db": "Postgres"}, idempotency_key=key)
    assert replay["lease"]["id"] == done["lease"]["id"]
    assert refusal(ConflictingResult, agent.complete, lease2["id"], lease2["epoch"], {"db": "other"}).code == "conflicting_result"

    # release hands an item back at once; fail sends it back after a backoff
    other = agent.create_item(project, "python e2e: release and fail", labels=["e2e"])
    third = agent.claim(project, "py-1", labels=["e2e"])
    assert third is not None and third["item"]["id"] == other["id"], third
    released = agent.release(third["lease"]["id"], third["lease"]["epoch"], "shutting down")
    assert released["lease"]["outcome"] == "released" and released["item"]["state"] == "ready", released
    fourth = agent.claim(project, "py-1", labels=["e2e"])
    assert fourth is not None and fourth["item"]["id"] == other["id"], fourth
    failed = agent.fail(fourth["lease"]["id"], fourth["lease"]["epoch"], "tests fail", details={"exit": 1})
    assert failed["lease"]["outcome"] == "failed", failed["lease"]
    assert failed["retry_after"], "no retry_after after a failure"
    assert refusal(LeaseLost, agent.release, fourth["lease"]["id"], fourth["lease"]["epoch"]).code == "lease_lost"

    # an item requiring a capability goes only to a claim that offers it
    gpu = agent.create_item(project, "python e2e: needs a gpu", labels=["e2e-gpu"], requires=["gpu"])
    assert agent.claim(project, "py-1", labels=["e2e-gpu"]) is None, "claimed an item requiring a capability not offered"
    fifth = agent.claim(project, "py-1", labels=["e2e-gpu"], capabilities=["gpu"])
    assert fifth is not None and fifth["item"]["id"] == gpu["id"], fifth
    agent.complete(fifth["lease"]["id"], fifth["lease"]["epoch"], {"gpu": True})

    # batches: three leases in one claim, renewed and completed in one call
    # each; an entry with a stale epoch refuses itself only
    for i in range(3):
        agent.create_item(project, "python e2e: batch %d" % i, labels=["e2e-batch"])
    batch = agent.claim_batch(project, "py-2", 10, lease_seconds=60, labels=["e2e-batch"])
    assert len(batch) == 3, batch
    leases = [c["lease"] for c in batch]
    beats = agent.heartbeat_batch(project, [
        {"lease_id": leases[0]["id"], "epoch": leases[0]["epoch"], "progress": {"step": 1}},
        {"lease_id": leases[1]["id"], "epoch": leases[1]["epoch"] + 1},
    ])
    assert [b["status"] for b in beats] == [200, 409], beats
    assert beats[0]["heartbeat"]["lease"]["heartbeats"] == 1, beats[0]
    assert entry_error("heartbeat", beats[0]) is None
    lost = entry_error("heartbeat", beats[1])
    assert isinstance(lost, LeaseLost) and lost.code == "lease_lost", lost
    done_batch = agent.complete_batch(project, [
        {"lease_id": leases[0]["id"], "epoch": leases[0]["epoch"], "result": {"n": 0}},
        {"lease_id": leases[1]["id"], "epoch": leases[1]["epoch"] + 1, "result": {"n": 1}},
        {"lease_id": leases[2]["id"], "epoch": leases[2]["epoch"]},
    ])
    assert [c["status"] for c in done_batch] == [200, 409, 200], done_batch
    assert done_batch[0]["completion"]["item"]["state"] == "done", done_batch[0]
    assert isinstance(entry_error("complete", done_batch[1]), LeaseLost)
    rest = agent.complete_batch(project, [{"lease_id": leases[1]["id"], "epoch": leases[1]["epoch"]}])
    assert rest[0]["completion"]["lease"]["outcome"] == "completed", rest

    # a bad token
    stranger = Client(base_url, "wg_not_a_token", attempts=1)
    unauth = refusal(Unauthenticated, stranger.list_attention, project)
    assert unauth.status == 401 and unauth.code == "unauthenticated"

    print("python e2e: ok")


if __name__ == "__main__":
    try:
        main()
    except Exception:
        import traceback

        traceback.print_exc()
        print("python e2e: FAIL", file=sys.stderr)
        sys.exit(1)
