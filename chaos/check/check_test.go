package check

import (
	"encoding/json"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
func atp(ms int) *time.Time {
	t := at(ms)
	return &t
}
func str(s string) *string { return &s }

func acked(id, status int, kind string, invoke, ret int) Op {
	return Op{ID: id, Worker: "w1", Kind: kind, Invoke: at(invoke), Return: at(ret), Answer: Acked,
		Attempts: []Attempt{{Replica: 0, At: at(ret), Status: status}}}
}

// valid is a correct history: item A claimed (epoch 1), heartbeat,
// released; claimed again (epoch 2) and completed. Item B depends on A and
// is claimed after A's completion and completed.
func valid() *History {
	createA := acked(10, 201, OpCreate, -20, -15)
	createA.Worker, createA.Item = "producer", "A"
	createB := acked(11, 201, OpCreate, -10, -5)
	createB.Worker, createB.Item = "producer", "B"
	claim1 := acked(1, 201, OpClaim, 0, 10)
	claim1.Item, claim1.GotLease, claim1.GotEpoch, claim1.TTL = "A", "L1", 1, 2
	hb := acked(2, 200, OpHeartbeat, 100, 110)
	hb.Item, hb.Lease, hb.Epoch = "A", "L1", 1
	rel := acked(3, 200, OpRelease, 200, 210)
	rel.Item, rel.Lease, rel.Epoch = "A", "L1", 1
	claim2 := acked(4, 201, OpClaim, 300, 310)
	claim2.Worker = "w2"
	claim2.Item, claim2.GotLease, claim2.GotEpoch, claim2.TTL = "A", "L2", 2, 2
	done := acked(5, 200, OpComplete, 400, 410)
	done.Worker = "w2"
	done.Item, done.Lease, done.Epoch, done.Result = "A", "L2", 2, `{"n": 1}`
	claim3 := acked(6, 201, OpClaim, 500, 510)
	claim3.Item, claim3.GotLease, claim3.GotEpoch, claim3.TTL = "B", "L3", 1, 2
	done3 := acked(7, 200, OpComplete, 600, 610)
	done3.Item, done3.Lease, done3.Epoch, done3.Result = "B", "L3", 1, `2`
	return &History{
		TTL:           2,
		Grace:         time.Second,
		StuckKeyAfter: 10 * time.Second,
		ReadyBound:    30 * time.Second,
		Ops:           []Op{createA, createB, claim1, hb, rel, claim2, done, claim3, done3},
		Leases: []Lease{
			{ID: "L1", Seq: 1, Item: "A", Epoch: 1, Worker: "w1", AcquiredAt: at(5), ExpiresAt: at(2005), EndedAt: atp(205), Outcome: str("released"), Heartbeats: 1},
			{ID: "L2", Seq: 2, Item: "A", Epoch: 2, Worker: "w2", AcquiredAt: at(305), ExpiresAt: at(2305), EndedAt: atp(405), Outcome: str("completed"), Result: json.RawMessage(`{"n":1}`)},
			{ID: "L3", Seq: 3, Item: "B", Epoch: 1, Worker: "w1", AcquiredAt: at(505), ExpiresAt: at(2505), EndedAt: atp(605), Outcome: str("completed"), Result: json.RawMessage(`2`)},
		},
		Items: []Item{
			{ID: "A", Status: "done", Epoch: 2},
			{ID: "B", Status: "done", Epoch: 1, DependsOn: []string{"A"}},
		},
		Faults: []Fault{{Kind: "kill", Target: "replica 1", Start: at(1000), End: at(1100), Healed: at(1200)}},
		Snapshots: []map[string]Ended{
			{"L1": {EndedAt: at(205), Outcome: "released"}},
		},
		Events: []Event{
			{Seq: 1, Type: "item.created", Item: "A"},
			{Seq: 2, Type: "item.created", Item: "B"},
			{Seq: 3, Type: "lease.granted", Lease: "L1", Item: "A", Epoch: 1},
			{Seq: 4, Type: "lease.ended", Lease: "L1", Item: "A", Epoch: 1, Outcome: "released"},
			{Seq: 5, Type: "lease.granted", Lease: "L2", Item: "A", Epoch: 2},
			{Seq: 6, Type: "lease.ended", Lease: "L2", Item: "A", Epoch: 2, Outcome: "completed"},
			{Seq: 7, Type: "lease.granted", Lease: "L3", Item: "B", Epoch: 1},
			{Seq: 8, Type: "lease.ended", Lease: "L3", Item: "B", Epoch: 1, Outcome: "completed"},
		},
		AppendOnlyTried: true,
		AppendOnlyErr:   errRefused,
	}
}

var errRefused = &refusal{}

type refusal struct{}

func (*refusal) Error() string { return "history is append-only" }

func TestCheck(t *testing.T) {
	t.Parallel()

	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		if r := Check(valid()); !r.OK() {
			t.Fatalf("a valid history has violations: %+v", r.Violations)
		}
	})

	cases := []struct {
		name   string
		inv    string
		doctor func(h *History)
	}{
		{"Overlap", InvOverlap, func(h *History) {
			// The first lease ended after the second was acquired.
			h.Leases[0].EndedAt = atp(320)
		}},
		{"AcquiredOutOfOrder", InvOverlap, func(h *History) {
			// Epoch 2 stamped as acquired before epoch 1 was.
			h.Leases[1].AcquiredAt = at(3)
			h.Leases[1].ExpiresAt = at(2003)
		}},
		{"GrantedShort", InvLeaseTimes, func(h *History) {
			h.Leases[1].ExpiresAt = at(1305)
		}},
		{"EndedAfterExpiry", InvLeaseTimes, func(h *History) {
			h.Leases[2].EndedAt = atp(2600)
		}},
		{"EpochSkip", InvEpochs, func(h *History) {
			h.Leases[1].Epoch = 3
			h.Items[0].Epoch = 3
			h.Ops[5].GotEpoch = 3
			h.Ops[6].Epoch = 3
		}},
		{"OutcomeRewritten", InvOutcomes, func(h *History) {
			h.Leases[0].Outcome = str("failed")
			h.Ops[4].Kind = OpFail
		}},
		{"TwoCompletions", InvOutcomes, func(h *History) {
			h.Leases[0].Outcome = str("completed")
			h.Ops[4].Kind = OpComplete
			h.Snapshots = nil
		}},
		{"RewriteAccepted", InvOutcomes, func(h *History) {
			h.AppendOnlyErr = nil
		}},
		{"AckedCompletionLost", InvAckedLost, func(h *History) {
			h.Leases[1].Outcome = str("expired")
			h.Leases[1].EndedAt = atp(2400)
			h.Items[0].Status = "open"
		}},
		{"AckedCompletionOtherResult", InvAckedLost, func(h *History) {
			h.Leases[1].Result = json.RawMessage(`{"n":2}`)
		}},
		{"StaleHeartbeatAcked", InvStaleAcked, func(h *History) {
			// A replay of lease 1 after epoch 2 was granted, acked.
			op := acked(8, 200, OpHeartbeat, 350, 360)
			op.Item, op.Lease, op.Epoch, op.Stale = "A", "L1", 1, true
			h.Ops = append(h.Ops, op)
			h.Leases[0].Heartbeats = 2
		}},
		{"LateHeartbeatAcked", InvStaleAcked, func(h *History) {
			// The claim answered an expiry at 2005 ms; a heartbeat sent at
			// 2100 ms resurrected the lease.
			h.Ops[2].GotExpires = at(2005)
			h.Ops[3].Invoke, h.Ops[3].Return, h.Ops[3].Attempts[0].At = at(2100), at(2110), at(2110)
			h.Ops[4].Invoke, h.Ops[4].Return, h.Ops[4].Attempts[0].At = at(2200), at(2210), at(2210)
			h.Ops[5].Invoke, h.Ops[5].Return, h.Ops[5].Attempts[0].At = at(2300), at(2310), at(2310)
			h.Ops[6].Invoke, h.Ops[6].Return, h.Ops[6].Attempts[0].At = at(2400), at(2410), at(2410)
			h.Leases[0].ExpiresAt, h.Leases[0].EndedAt = at(4100), atp(2205)
			h.Leases[1].AcquiredAt, h.Leases[1].ExpiresAt, h.Leases[1].EndedAt = at(2305), at(4305), atp(2405)
			h.Snapshots = nil
		}},
		{"WrongEpochAcked", InvStaleAcked, func(h *History) {
			op := acked(8, 200, OpHeartbeat, 320, 330)
			op.Item, op.Lease, op.Epoch, op.Stale = "A", "L2", 3, true
			h.Ops = append(h.Ops, op)
		}},
		{"UnknownAppliedTwice", InvUnknownOnce, func(h *History) {
			op := Op{ID: 8, Worker: "w1", Kind: OpHeartbeat, Item: "A", Lease: "L1", Epoch: 1, Invoke: at(120), Return: at(190), Answer: Unknown,
				Attempts: []Attempt{{Replica: 1, At: at(190)}}}
			h.Ops = append(h.Ops, op)
			h.Leases[0].Heartbeats = 3
		}},
		{"RefusedApplied", InvUnknownOnce, func(h *History) {
			h.Ops[4].Answer = Refused
			h.Ops[4].Code = "lease_lost"
			h.Ops[4].Attempts[0].Status = 409
		}},
		{"OrphanLease", InvUnknownOnce, func(h *History) {
			h.Leases = append(h.Leases, Lease{ID: "L9", Seq: 9, Item: "C", Epoch: 1, Worker: "w1", AcquiredAt: at(5), ExpiresAt: at(2005), EndedAt: atp(2100), Outcome: str("expired")})
			h.Items = append(h.Items, Item{ID: "C", Status: "open", Epoch: 1, Ready: true})
		}},
		{"AckedCreationLost", InvAckedLost, func(h *History) {
			op := acked(8, 201, OpCreate, 700, 710)
			op.Worker, op.Item = "producer", "C"
			h.Ops = append(h.Ops, op)
		}},
		{"CreationAppliedTwice", InvUnknownOnce, func(h *History) {
			h.Items = append(h.Items, Item{ID: "A2", Status: "open", Ready: true})
		}},
		{"ClaimedBeforeDependency", InvDeps, func(h *History) {
			h.Leases[2].AcquiredAt = at(350)
		}},
		{"NotLinearizable", InvLinearizable, func(h *History) {
			// A heartbeat acked after the release of its lease returned
			// (no later claim, so only the register model sees it).
			op := acked(8, 200, OpHeartbeat, 250, 260)
			op.Item, op.Lease, op.Epoch = "A", "L1", 1
			h.Ops = append(h.Ops, op)
			h.Leases[0].Heartbeats = 2
		}},
		{"Internal500", InvHTTP5xx, func(h *History) {
			h.Ops[3].Attempts = append([]Attempt{{Replica: 2, At: at(105), Status: 500, Code: "internal"}}, h.Ops[3].Attempts...)
		}},
		{"Unavailable503WithoutFault", InvHTTP5xx, func(h *History) {
			h.Ops[3].Attempts = append([]Attempt{{Replica: 2, At: at(105), Status: 503, Code: "unavailable"}}, h.Ops[3].Attempts...)
		}},
		{"Unavailable503DuringReplicaFault", InvHTTP5xx, func(h *History) {
			// The valid history's only fault is a replica kill: the
			// database stayed up, so a 503 then is no excuse.
			h.Ops[3].Attempts = append([]Attempt{{Replica: 2, At: at(1050), Status: 503, Code: "unavailable"}}, h.Ops[3].Attempts...)
		}},
		{"NotReadyAgain", InvReadiness, func(h *History) {
			h.Faults[0].Healed = time.Time{}
		}},
		{"StuckItem", InvStuck, func(h *History) {
			h.Stuck = []string{"B"}
		}},
		{"StuckIdempotencyKeyInProgress", InvStuck, func(h *History) {
			h.Ops = append(h.Ops, Op{ID: 8, Worker: "w1", Kind: OpComplete, Key: "k2", Invoke: at(700), Return: at(20700), Answer: Unknown, Code: "request_in_progress",
				Attempts: []Attempt{{Replica: 0, At: at(900)}, {Replica: 1, At: at(20700), Status: 409, Code: "request_in_progress", Detail: "retry in a moment"}}})
		}},
		{"StuckIdempotencyKey", InvStuck, func(h *History) {
			h.Ops = append(h.Ops, Op{ID: 8, Worker: "w1", Kind: OpClaim, Key: "k1", Invoke: at(700), Return: at(20700), Answer: Unknown, Code: "conflict",
				Attempts: []Attempt{{Replica: 0, At: at(900)}, {Replica: 1, At: at(20700), Status: 409, Code: "conflict",
					Detail: `a request with Idempotency-Key "k1" is still being processed; retry later`}}})
		}},
		{"EventGrantedTwice", InvEvents, func(h *History) {
			h.Events = append(h.Events, Event{Seq: 9, Type: "lease.granted", Lease: "L2", Item: "A", Epoch: 2})
		}},
		{"EventEndedMissing", InvEvents, func(h *History) {
			h.Events = append(h.Events[:3], h.Events[4:]...)
		}},
		{"EventEndedWrongOutcome", InvEvents, func(h *History) {
			h.Events[5].Outcome = "released"
		}},
		{"EventEndedOfLiveLease", InvEvents, func(h *History) {
			h.Leases[2].EndedAt, h.Leases[2].Outcome, h.Leases[2].Result = nil, nil, nil
			h.Items[1].Status = "open"
			h.Ops = h.Ops[:len(h.Ops)-1]
		}},
		{"EventOfUnknownLease", InvEvents, func(h *History) {
			h.Events = append(h.Events, Event{Seq: 9, Type: "lease.granted", Lease: "L9", Item: "A", Epoch: 3})
		}},
		{"EventItemCreatedTwice", InvEvents, func(h *History) {
			h.Events = append(h.Events, Event{Seq: 9, Type: "item.created", Item: "B"})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := valid()
			tc.doctor(h)
			r := Check(h)
			if r.Count(tc.inv) == 0 {
				t.Fatalf("planted %s violation not caught; got %+v", tc.inv, r.Violations)
			}
		})
	}
}

// TestCheck503DuringDatabaseFault: a 503 while the database is down (or
// its link cut) is the documented answer, not a violation.
func TestCheck503DuringDatabaseFault(t *testing.T) {
	t.Parallel()
	h := valid()
	h.Faults = append(h.Faults, Fault{Kind: "pg-restart", Target: "database", Start: at(1000), End: at(1100), Healed: at(1200), DBFault: true})
	h.Ops[3].Attempts = append([]Attempt{{Replica: 2, At: at(1050), Status: 503, Code: "unavailable"}}, h.Ops[3].Attempts...)
	if r := Check(h); !r.OK() {
		t.Fatalf("a 503 during a database fault: %+v", r.Violations)
	}
}

// TestCheckNotLinearizableAlone shows that the register model, not only
// the row checks, catches a heartbeat acked after its lease's release.
func TestCheckNotLinearizableAlone(t *testing.T) {
	t.Parallel()
	h := valid()
	op := acked(8, 200, OpHeartbeat, 250, 260)
	op.Item, op.Lease, op.Epoch = "A", "L1", 1
	h.Ops = append(h.Ops, op)
	h.Leases[0].Heartbeats = 2
	r := Check(h)
	for _, v := range r.Violations {
		if v.Invariant != InvLinearizable {
			t.Errorf("unexpected %s violation: %s", v.Invariant, v.Detail)
		}
	}
	if r.Count(InvLinearizable) != 1 {
		t.Fatalf("linearizable violations = %d, want 1", r.Count(InvLinearizable))
	}
}
