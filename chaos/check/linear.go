package check

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// The lease register: the sequential model of one item's leases that every
// item's history must linearize to.
//
// A claim that hands out the item moves it to a new, higher epoch (an
// unknown claim, whose item the client never learned, may have used an epoch
// in between, so the model asks for "higher", and the epochs invariant checks
// "+1" on the server's rows). A lease mutation is acknowledged only for the
// current lease and epoch while it is live. A refusal with lease_lost is
// legal at any time (the lease may have expired, which no operation shows),
// and after it the lease is over for good: nothing brings it back. A
// completion ends the item; the identical completion again is a replay, a
// different one is conflicting_result. An operation with an unknown outcome
// either took effect or did not.
type regState struct {
	Epoch  int64
	Lease  string
	Ended  bool
	Done   bool
	DoneBy string
	Result string
}

type regInput struct {
	Kind   string
	Lease  string
	Epoch  int64
	Result string
}

type regOutput struct {
	Answer Answer
	Code   string
	Lease  string // a claim's lease
	Epoch  int64  // a claim's epoch
}

func regStep(s regState, in regInput, out regOutput) []regState {
	if out.Answer == Unknown {
		next := []regState{s}
		if ok, applied := regApply(s, in, regOutput{Answer: Acked}); ok {
			next = append(next, applied)
		}
		return next
	}
	if ok, n := regApply(s, in, out); ok {
		return []regState{n}
	}
	return nil
}

func regApply(s regState, in regInput, out regOutput) (bool, regState) {
	current := in.Lease == s.Lease && in.Epoch == s.Epoch
	live := current && !s.Ended && !s.Done
	if out.Answer == Refused {
		switch out.Code {
		case "lease_lost":
			if current && !s.Done {
				s.Ended = true
			}
			return true, s
		case "conflicting_result":
			return s.Done && s.DoneBy == in.Lease && s.Result != in.Result, s
		default:
			return true, s
		}
	}
	switch in.Kind {
	case OpClaim:
		if s.Done || out.Epoch <= s.Epoch {
			return false, s
		}
		return true, regState{Epoch: out.Epoch, Lease: out.Lease}
	case OpHeartbeat:
		return live, s
	case OpComplete:
		if live {
			s.Ended, s.Done, s.DoneBy, s.Result = true, true, in.Lease, in.Result
			return true, s
		}
		return s.Done && s.DoneBy == in.Lease && s.Result == in.Result, s
	case OpRelease, OpFail, OpAsk:
		if live {
			s.Ended = true
			return true, s
		}
		return false, s
	}
	return false, s
}

var leaseRegister = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{regState{}} },
	Step: func(state, input, output interface{}) []interface{} {
		var out []interface{}
		for _, n := range regStep(state.(regState), input.(regInput), output.(regOutput)) {
			out = append(out, n)
		}
		return out
	},
	DescribeOperation: func(input, output interface{}) string {
		in, o := input.(regInput), output.(regOutput)
		return fmt.Sprintf("%s(%s@%d) -> %s %s %s@%d", in.Kind, short(in.Lease), in.Epoch, o.Answer, o.Code, short(o.Lease), o.Epoch)
	},
}

// short is the last 8 characters of a lease id: lease ids are UUIDs of
// version 7 (migration 00166), whose first characters are the time of the
// grant and shared by the leases of the same minute; the last are random.
func short(id string) string {
	if len(id) > 8 {
		return "…" + id[len(id)-8:]
	}
	return id
}

// ItemOperations returns, per item, the operations of its lease register:
// acked claims that handed out the item, and every lease mutation.
func ItemOperations(ops []Op) map[string][]porcupine.Operation {
	var t0 time.Time
	for _, op := range ops {
		if t0.IsZero() || op.Invoke.Before(t0) {
			t0 = op.Invoke
		}
	}
	per := map[string][]porcupine.Operation{}
	for _, op := range ops {
		var in regInput
		switch {
		case op.Kind == OpClaim && op.Answer == Acked && op.GotLease != "":
			in = regInput{Kind: OpClaim}
		case isLeaseOp(op.Kind) && op.Item != "":
			in = regInput{Kind: op.Kind, Lease: op.Lease, Epoch: op.Epoch, Result: NormJSON([]byte(op.Result))}
		default:
			continue
		}
		out := regOutput{Answer: op.Answer, Code: op.Code, Lease: op.GotLease, Epoch: op.GotEpoch}
		ret := int64(math.MaxInt64 / 2)
		if op.Answer != Unknown {
			ret = int64(op.Return.Sub(t0))
		}
		per[op.Item] = append(per[op.Item], porcupine.Operation{
			ClientId: 0, Input: in, Output: out, Call: int64(op.Invoke.Sub(t0)), Return: ret, Metadata: op.ID,
		})
	}
	return per
}

func (c *checker) linearizable() {
	model := leaseRegister.ToModel()
	per := ItemOperations(c.h.Ops)
	items := make([]string, 0, len(per))
	for it := range per {
		items = append(items, it)
	}
	sort.Strings(items)
	for _, it := range items {
		switch porcupine.CheckOperationsTimeout(model, per[it], 10*time.Second) {
		case porcupine.Illegal:
			c.fail(InvLinearizable, "item %s: its %d operations do not linearize to a lease register", it, len(per[it]))
		case porcupine.Unknown:
			c.fail(InvLinearizable, "item %s: the linearizability check timed out (%d operations)", it, len(per[it]))
		}
	}
}
