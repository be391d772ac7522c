package check

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// The invariants, in the order the report prints them.
const (
	InvOverlap      = "overlap"      // at most one live lease per item by the stored timestamps
	InvLeaseTimes   = "lease-times"  // expires_at - acquired_at is the TTL; fenced ends before expiry
	InvEpochs       = "epochs"       // epochs 1, 2, ... per item, in claim order
	InvOutcomes     = "outcomes"     // one outcome per ended lease, never rewritten, at most one completion
	InvAckedLost    = "acked-lost"   // every acked mutation present (completion with its epoch, item done)
	InvStaleAcked   = "stale-acked"  // no stale or wrong-epoch mutation acked
	InvUnknownOnce  = "unknown-once" // an unknown (or refused) operation applied at most once (refused: never)
	InvDeps         = "deps"         // no item claimed before its dependencies finished
	InvLinearizable = "linearizable" // per item, against the lease register model
	InvHTTP5xx      = "http-5xx"     // no 500; 503 only while a fault is in effect
	InvReadiness    = "readiness"    // every replica ready again after each fault, without a restart
	InvStuck        = "stuck"        // nothing stuck once faults heal (items, Idempotency-Keys)
	InvEvents       = "events"       // the event log tells each lease's grant and end, and each item's creation, exactly once
)

// Invariants lists every invariant the checker judges.
var Invariants = []string{
	InvOverlap, InvLeaseTimes, InvEpochs, InvOutcomes, InvAckedLost, InvStaleAcked,
	InvUnknownOnce, InvDeps, InvLinearizable, InvHTTP5xx, InvReadiness, InvStuck, InvEvents,
}

// Violation is one broken promise, with enough detail to find it.
type Violation struct {
	Invariant string
	Detail    string
}

// Result is the checker's verdict on one history.
type Result struct {
	Violations []Violation
}

// Count returns the number of violations of one invariant.
func (r Result) Count(inv string) int {
	n := 0
	for _, v := range r.Violations {
		if v.Invariant == inv {
			n++
		}
	}
	return n
}

// OK reports whether no invariant was violated.
func (r Result) OK() bool { return len(r.Violations) == 0 }

type checker struct {
	h      *History
	out    []Violation
	leases map[string]*Lease
	byItem map[string][]*Lease // sorted by epoch
	items  map[string]*Item
}

func (c *checker) fail(inv, format string, args ...any) {
	c.out = append(c.out, Violation{Invariant: inv, Detail: fmt.Sprintf(format, args...)})
}

// Check judges a history against every invariant.
func Check(h *History) Result {
	c := &checker{h: h, leases: map[string]*Lease{}, byItem: map[string][]*Lease{}, items: map[string]*Item{}}
	for i := range h.Leases {
		l := &h.Leases[i]
		c.leases[l.ID] = l
		c.byItem[l.Item] = append(c.byItem[l.Item], l)
	}
	for _, ls := range c.byItem {
		sort.Slice(ls, func(i, j int) bool { return ls[i].Epoch < ls[j].Epoch })
	}
	for i := range h.Items {
		c.items[h.Items[i].ID] = &h.Items[i]
	}
	c.overlap()
	c.leaseTimes()
	c.epochs()
	c.outcomes()
	c.acked()
	c.stale()
	c.late()
	c.unknownOnce()
	c.deps()
	c.linearizable()
	c.http5xx()
	c.readiness()
	c.stuck()
	c.events()
	return Result{Violations: c.out}
}

// liveUntil is the end of a lease's life: its end, or its expiry if that
// came first (a lease past expires_at is dead even before the sweeper ends it).
func liveUntil(l *Lease) time.Time {
	if l.EndedAt != nil && l.EndedAt.Before(l.ExpiresAt) {
		return *l.EndedAt
	}
	return l.ExpiresAt
}

// overlap checks consecutive epochs: when each lease's life ends by the
// next one's acquired_at, the lives are ordered and pairwise disjoint.
func (c *checker) overlap() {
	for item, ls := range c.byItem {
		for i := 1; i < len(ls); i++ {
			prev, next := ls[i-1], ls[i]
			if end := liveUntil(prev); end.After(next.AcquiredAt) {
				c.fail(InvOverlap, "item %s: lease epoch %d live until %s overlaps lease epoch %d acquired at %s (by %s)",
					item, prev.Epoch, ts(end), next.Epoch, ts(next.AcquiredAt), end.Sub(next.AcquiredAt))
			}
		}
	}
}

func (c *checker) leaseTimes() {
	ttl := time.Duration(c.h.TTL) * time.Second
	for _, l := range c.h.Leases {
		if c.h.TTL > 0 && l.Heartbeats == 0 && l.ExpiresAt.Sub(l.AcquiredAt) != ttl {
			c.fail(InvLeaseTimes, "lease %s: expires_at - acquired_at = %s, asked for %s", l.ID, l.ExpiresAt.Sub(l.AcquiredAt), ttl)
		}
		if !l.ExpiresAt.After(l.AcquiredAt) {
			c.fail(InvLeaseTimes, "lease %s: granted already expired (acquired %s, expires %s)", l.ID, ts(l.AcquiredAt), ts(l.ExpiresAt))
		}
		if l.EndedAt == nil || l.Outcome == nil {
			continue
		}
		if l.EndedAt.Before(l.AcquiredAt) {
			c.fail(InvLeaseTimes, "lease %s: ended %s before it was acquired %s", l.ID, ts(*l.EndedAt), ts(l.AcquiredAt))
		}
		switch *l.Outcome {
		case "expired":
			if l.EndedAt.Before(l.ExpiresAt) {
				c.fail(InvLeaseTimes, "lease %s: ended as expired at %s before its expiry %s", l.ID, ts(*l.EndedAt), ts(l.ExpiresAt))
			}
		case "cancelled":
		default:
			// A worker's ending is fenced by expires_at > now().
			if !l.EndedAt.Before(l.ExpiresAt) {
				c.fail(InvLeaseTimes, "lease %s: %s at %s, not before its expiry %s", l.ID, *l.Outcome, ts(*l.EndedAt), ts(l.ExpiresAt))
			}
		}
	}
}

func (c *checker) epochs() {
	for item, ls := range c.byItem {
		for i, l := range ls {
			if l.Epoch != int64(i+1) {
				c.fail(InvEpochs, "item %s: lease %d of the item has epoch %d (epochs %s)", item, i+1, l.Epoch, epochList(ls))
				break
			}
			if i > 0 && ls[i-1].Seq > l.Seq {
				c.fail(InvEpochs, "item %s: epoch %d was stored before epoch %d", item, l.Epoch, ls[i-1].Epoch)
			}
		}
		if it := c.items[item]; it != nil && it.Epoch != int64(len(ls)) {
			c.fail(InvEpochs, "item %s: item epoch %d, %d leases", item, it.Epoch, len(ls))
		}
	}
	for id, it := range c.items {
		if len(c.byItem[id]) == 0 && it.Epoch != 0 {
			c.fail(InvEpochs, "item %s: epoch %d without leases", id, it.Epoch)
		}
	}
}

func (c *checker) outcomes() {
	for _, l := range c.h.Leases {
		if (l.EndedAt == nil) != (l.Outcome == nil) {
			c.fail(InvOutcomes, "lease %s: ended_at and outcome disagree", l.ID)
		}
	}
	for i, snap := range c.h.Snapshots {
		for id, was := range snap {
			l := c.leases[id]
			switch {
			case l == nil:
				c.fail(InvOutcomes, "lease %s: ended (snapshot %d) and later gone", id, i+1)
			case l.EndedAt == nil || l.Outcome == nil:
				c.fail(InvOutcomes, "lease %s: ended as %s (snapshot %d), later live again", id, was.Outcome, i+1)
			case !l.EndedAt.Equal(was.EndedAt) || *l.Outcome != was.Outcome || NormJSON(l.Result) != was.Result:
				c.fail(InvOutcomes, "lease %s: ended as %s at %s (snapshot %d), rewritten to %s at %s",
					id, was.Outcome, ts(was.EndedAt), i+1, *l.Outcome, ts(*l.EndedAt))
			}
		}
	}
	if c.h.AppendOnlyTried && c.h.AppendOnlyErr == nil {
		c.fail(InvOutcomes, "the database accepted a rewrite of an ended lease")
	}
	for item, ls := range c.byItem {
		completed := 0
		for i, l := range ls {
			if l.Outcome != nil && *l.Outcome == "completed" {
				completed++
				if i != len(ls)-1 {
					c.fail(InvOutcomes, "item %s: completed by epoch %d, claimed again (epoch %d)", item, l.Epoch, ls[len(ls)-1].Epoch)
				}
			}
			if l.EndedAt == nil && i != len(ls)-1 {
				c.fail(InvOutcomes, "item %s: lease epoch %d still live under epoch %d", item, l.Epoch, ls[len(ls)-1].Epoch)
			}
		}
		if completed > 1 {
			c.fail(InvOutcomes, "item %s: %d completed leases", item, completed)
		}
		if it := c.items[item]; it != nil && (it.Status == "done") != (completed == 1) {
			c.fail(InvOutcomes, "item %s: status %s with %d completed leases", item, it.Status, completed)
		}
	}
}

// acked: every acked lease mutation is present in the server's history.
func (c *checker) acked() {
	for _, op := range c.h.Ops {
		if op.Answer != Acked {
			continue
		}
		switch op.Kind {
		case OpClaim:
			if op.GotLease == "" {
				continue // nothing was ready (204)
			}
			l := c.leases[op.GotLease]
			if l == nil || l.Epoch != op.GotEpoch || l.Item != op.Item {
				c.fail(InvAckedLost, "op %d: acked claim of item %s (lease %s epoch %d) not in the history", op.ID, op.Item, op.GotLease, op.GotEpoch)
			}
		case OpCreate:
			if c.items[op.Item] == nil {
				c.fail(InvAckedLost, "op %d: acked creation of item %s not in the history", op.ID, op.Item)
			}
		case OpHeartbeat:
			l := c.leases[op.Lease]
			if l == nil || l.Epoch != op.Epoch || l.Heartbeats < 1 {
				c.fail(InvAckedLost, "op %d: acked heartbeat of lease %s epoch %d not in the history", op.ID, op.Lease, op.Epoch)
			}
		case OpComplete, OpRelease, OpFail, OpAsk:
			want := outcomeOf[op.Kind]
			l := c.leases[op.Lease]
			switch {
			case l == nil:
				c.fail(InvAckedLost, "op %d: acked %s of lease %s: no such lease", op.ID, op.Kind, op.Lease)
			case l.Epoch != op.Epoch:
				c.fail(InvAckedLost, "op %d: acked %s of lease %s with epoch %d, the lease has epoch %d", op.ID, op.Kind, op.Lease, op.Epoch, l.Epoch)
			case l.Outcome == nil || *l.Outcome != want:
				c.fail(InvAckedLost, "op %d: acked %s of lease %s, stored outcome %s", op.ID, op.Kind, op.Lease, deref(l.Outcome))
			case op.Kind == OpComplete:
				if NormJSON(l.Result) != NormJSON(json.RawMessage(op.Result)) {
					c.fail(InvAckedLost, "op %d: acked completion of lease %s with result %s, stored %s", op.ID, op.Lease, op.Result, l.Result)
				}
				if it := c.items[l.Item]; it == nil || it.Status != "done" {
					c.fail(InvAckedLost, "op %d: acked completion of lease %s, item %s not done", op.ID, op.Lease, l.Item)
				}
			}
		}
	}
}

// stale: a lease mutation presenting an epoch other than its lease's, or
// sent after a claim of the same item with a higher epoch was acked, must
// not be acked.
func (c *checker) stale() {
	// The earliest acknowledged return of a claim per item and epoch.
	type claimSeen struct {
		epoch int64
		ret   time.Time
	}
	claims := map[string][]claimSeen{}
	for _, op := range c.h.Ops {
		if op.Kind == OpClaim && op.Answer == Acked && op.GotLease != "" {
			claims[op.Item] = append(claims[op.Item], claimSeen{op.GotEpoch, op.Return})
		}
	}
	for _, op := range c.h.Ops {
		if op.Answer != Acked || !isLeaseOp(op.Kind) {
			continue
		}
		if l := c.leases[op.Lease]; l != nil && l.Epoch != op.Epoch {
			c.fail(InvStaleAcked, "op %d: %s of lease %s with wrong epoch %d (lease epoch %d) acked", op.ID, op.Kind, op.Lease, op.Epoch, l.Epoch)
			continue
		}
		item := op.Item
		if l := c.leases[op.Lease]; l != nil {
			item = l.Item
		}
		for _, cl := range claims[item] {
			if cl.epoch > op.Epoch && cl.ret.Before(op.Invoke) {
				c.fail(InvStaleAcked, "op %d: %s of lease %s epoch %d sent after epoch %d of item %s was granted, acked",
					op.ID, op.Kind, op.Lease, op.Epoch, cl.epoch, item)
				break
			}
		}
	}
}

// late: a lease mutation sent after the lease's expiry (as the server
// last answered it before the mutation was sent) must not be acked: a
// heartbeat never resurrects an expired lease. The database and the suite
// read one host clock; a lease with a heartbeat of unknown outcome is
// skipped, since that heartbeat may have extended it unseen.
func (c *checker) late() {
	const skew = 10 * time.Millisecond
	type extension struct {
		ret     time.Time
		expires time.Time
	}
	known := map[string][]extension{}
	unsure := map[string]bool{}
	for _, op := range c.h.Ops {
		switch {
		case op.Kind == OpClaim && op.Answer == Acked && op.GotLease != "" && !op.GotExpires.IsZero():
			known[op.GotLease] = append(known[op.GotLease], extension{op.Return, op.GotExpires})
		case op.Kind == OpHeartbeat && op.Answer == Acked && !op.GotExpires.IsZero():
			known[op.Lease] = append(known[op.Lease], extension{op.Return, op.GotExpires})
		case op.Kind == OpHeartbeat && op.Answer == Unknown:
			unsure[op.Lease] = true
		}
	}
	for _, op := range c.h.Ops {
		if op.Answer != Acked || !isLeaseOp(op.Kind) || unsure[op.Lease] || len(known[op.Lease]) == 0 {
			continue
		}
		var expires time.Time
		for _, e := range known[op.Lease] {
			if e.ret.Before(op.Invoke) && e.expires.After(expires) {
				expires = e.expires
			}
		}
		if !expires.IsZero() && op.Invoke.After(expires.Add(skew)) {
			c.fail(InvStaleAcked, "op %d: %s of lease %s sent %s after the lease expired (%s), acked",
				op.ID, op.Kind, op.Lease, op.Invoke.Sub(expires).Round(time.Millisecond), ts(expires))
		}
	}
}

// unknownOnce: what the server stored is explained by the operations that
// may have taken effect (acked or unknown), each at most once; a refused
// operation took no effect.
func (c *checker) unknownOnce() {
	type counts struct{ acked, unknown, refused int }
	perLease := map[string]map[string]*counts{}
	claimsByWorker := map[string]*counts{}
	knownLease := map[string]bool{}
	for _, op := range c.h.Ops {
		if op.Kind == OpClaim {
			k := claimsByWorker[op.Worker]
			if k == nil {
				k = &counts{}
				claimsByWorker[op.Worker] = k
			}
			switch op.Answer {
			case Acked:
				knownLease[op.GotLease] = true
			case Unknown:
				k.unknown++
			}
			continue
		}
		if !isLeaseOp(op.Kind) {
			continue
		}
		m := perLease[op.Lease]
		if m == nil {
			m = map[string]*counts{}
			perLease[op.Lease] = m
		}
		k := m[op.Kind]
		if k == nil {
			k = &counts{}
			m[op.Kind] = k
		}
		switch op.Answer {
		case Acked:
			k.acked++
		case Unknown:
			k.unknown++
		case Refused:
			k.refused++
		}
	}
	// Items: every item is created by an operation that may have taken
	// effect, each at most once.
	var createAcked, createUnknown int
	for _, op := range c.h.Ops {
		if op.Kind == OpCreate {
			switch op.Answer {
			case Acked:
				createAcked++
			case Unknown:
				createUnknown++
			}
		}
	}
	if n := len(c.h.Items); n < createAcked || n > createAcked+createUnknown {
		c.fail(InvUnknownOnce, "%d items stored, %d creations acked and %d unknown", n, createAcked, createUnknown)
	}
	orphans := map[string]int{}
	for _, l := range c.h.Leases {
		if !knownLease[l.ID] {
			orphans[l.Worker]++
		}
		m := perLease[l.ID]
		hb := m[OpHeartbeat]
		if hb == nil {
			hb = &counts{}
		}
		if l.Heartbeats < hb.acked || l.Heartbeats > hb.acked+hb.unknown {
			c.fail(InvUnknownOnce, "lease %s: %d heartbeats stored, %d acked and %d unknown sent", l.ID, l.Heartbeats, hb.acked, hb.unknown)
		}
		if l.Outcome == nil {
			continue
		}
		for kind, outcome := range outcomeOf {
			if *l.Outcome != outcome {
				continue
			}
			k := m[kind]
			if k == nil || k.acked+k.unknown == 0 {
				c.fail(InvUnknownOnce, "lease %s: ended as %s without an acked or unknown %s", l.ID, outcome, kind)
			}
		}
	}
	for w, n := range orphans {
		k := claimsByWorker[w]
		if k == nil {
			k = &counts{}
		}
		if n > k.unknown {
			c.fail(InvUnknownOnce, "worker %s: %d leases it was never told of, %d claims with unknown outcome", w, n, k.unknown)
		}
	}
}

// deps: a lease of an item starts after every dependency's completion.
func (c *checker) deps() {
	doneAt := map[string]time.Time{}
	for _, l := range c.h.Leases {
		if l.Outcome != nil && *l.Outcome == "completed" {
			doneAt[l.Item] = *l.EndedAt
		}
	}
	for _, it := range c.h.Items {
		for _, l := range c.byItem[it.ID] {
			for _, d := range it.DependsOn {
				at, ok := doneAt[d]
				if dep := c.items[d]; dep != nil && dep.Status == "cancelled" {
					continue
				}
				switch {
				case !ok:
					c.fail(InvDeps, "item %s: epoch %d acquired at %s, dependency %s never completed", it.ID, l.Epoch, ts(l.AcquiredAt), d)
				case at.After(l.AcquiredAt):
					c.fail(InvDeps, "item %s: epoch %d acquired at %s, %s before dependency %s was completed (%s)",
						it.ID, l.Epoch, ts(l.AcquiredAt), at.Sub(l.AcquiredAt), d, ts(at))
				}
			}
		}
	}
}

// events: the event log, written by the same transactions as the rows it
// describes, holds for each stored lease exactly one lease.granted with its
// epoch and, once it ended, exactly one lease.ended with its outcome (none
// while it is live); for each stored item exactly one item.created; and no
// lease event of a lease the history does not hold. A retried request
// (an unknown outcome, a replayed Idempotency-Key) must not write an event
// twice, nor a rolled-back one leave an event behind.
func (c *checker) events() {
	granted := map[string][]Event{}
	ended := map[string][]Event{}
	created := map[string]int{}
	for _, e := range c.h.Events {
		switch e.Type {
		case "lease.granted":
			granted[e.Lease] = append(granted[e.Lease], e)
		case "lease.ended":
			ended[e.Lease] = append(ended[e.Lease], e)
		case "item.created":
			created[e.Item]++
			continue
		default:
			continue
		}
		if c.leases[e.Lease] == nil {
			c.fail(InvEvents, "event %d (%s) names lease %s, which the history does not hold", e.Seq, e.Type, e.Lease)
		}
	}
	for _, l := range c.h.Leases {
		switch g := granted[l.ID]; {
		case len(g) != 1:
			c.fail(InvEvents, "lease %s (item %s, epoch %d): %d lease.granted events, want 1", l.ID, l.Item, l.Epoch, len(g))
		case g[0].Epoch != l.Epoch || g[0].Item != l.Item:
			c.fail(InvEvents, "lease %s: lease.granted %d says item %s epoch %d, the lease is item %s epoch %d",
				l.ID, g[0].Seq, g[0].Item, g[0].Epoch, l.Item, l.Epoch)
		}
		e := ended[l.ID]
		switch {
		case l.EndedAt == nil && len(e) > 0:
			c.fail(InvEvents, "lease %s is live, but event %d says it ended (%s)", l.ID, e[0].Seq, e[0].Outcome)
		case l.EndedAt != nil && len(e) != 1:
			c.fail(InvEvents, "lease %s ended %s: %d lease.ended events, want 1", l.ID, deref(l.Outcome), len(e))
		case l.EndedAt != nil && e[0].Outcome != deref(l.Outcome):
			c.fail(InvEvents, "lease %s ended %s, but lease.ended %d says %s", l.ID, deref(l.Outcome), e[0].Seq, e[0].Outcome)
		}
	}
	for _, it := range c.h.Items {
		if n := created[it.ID]; n != 1 {
			c.fail(InvEvents, "item %s: %d item.created events, want 1", it.ID, n)
		}
	}
}

func (c *checker) http5xx() {
	grace := c.h.Grace
	for _, op := range c.h.Ops {
		for _, a := range op.Attempts {
			if a.Status < 500 {
				continue
			}
			if a.Status != 503 {
				c.fail(InvHTTP5xx, "op %d (%s) on replica %d: %d %s %q", op.ID, op.Kind, a.Replica, a.Status, a.Code, a.Detail)
				continue
			}
			if !c.inDBFault(a.At, grace) {
				c.fail(InvHTTP5xx, "op %d (%s) on replica %d: 503 at %s with no database fault in effect", op.ID, op.Kind, a.Replica, a.At.Format("15:04:05.000"))
			}
		}
	}
}

// inDBFault reports whether t falls in a fault of the database or of the
// link to it (Fault.DBFault), from its start until the replicas were ready
// again plus grace: the only time a 503 is an answer. A replica killed or
// stopped leaves the database up, and the other replicas must go on
// answering.
func (c *checker) inDBFault(t time.Time, grace time.Duration) bool {
	for _, f := range c.h.Faults {
		if !f.DBFault {
			continue
		}
		end := f.Healed
		if end.IsZero() {
			end = f.End
		}
		if !t.Before(f.Start) && !t.After(end.Add(grace)) {
			return true
		}
	}
	return false
}

func (c *checker) readiness() {
	for _, f := range c.h.Faults {
		if f.Healed.IsZero() {
			c.fail(InvReadiness, "%s of %s at %s: the replicas were not all ready again within %s", f.Kind, f.Target, f.Start.Format("15:04:05.000"), c.h.ReadyBound)
			continue
		}
		if c.h.ReadyBound > 0 && f.Healed.Sub(f.End) > c.h.ReadyBound {
			c.fail(InvReadiness, "%s of %s: ready again %s after the fault was removed (bound %s)", f.Kind, f.Target, f.Healed.Sub(f.End), c.h.ReadyBound)
		}
	}
}

func (c *checker) stuck() {
	for _, it := range c.h.Stuck {
		c.fail(InvStuck, "item %s: neither finished nor claimable after the drain", it)
	}
	for _, op := range c.h.Ops {
		if len(op.Attempts) == 0 {
			continue
		}
		last := op.Attempts[len(op.Attempts)-1]
		inProgress := strings.Contains(last.Detail, "still being processed") ||
			last.Code == "request_in_progress" && !strings.Contains(last.Detail, "contended")
		if inProgress && last.At.Sub(op.Invoke) >= c.h.StuckKeyAfter {
			c.fail(InvStuck, "op %d (%s): Idempotency-Key %s still \"being processed\" %s after it was first sent (%d attempts)",
				op.ID, op.Kind, op.Key, last.At.Sub(op.Invoke).Round(time.Millisecond), len(op.Attempts))
		}
	}
}

func isLeaseOp(kind string) bool {
	switch kind {
	case OpHeartbeat, OpComplete, OpRelease, OpFail, OpAsk:
		return true
	}
	return false
}

func epochList(ls []*Lease) string {
	var b strings.Builder
	for i, l := range ls {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, l.Epoch)
	}
	return b.String()
}

func ts(t time.Time) string { return t.UTC().Format("15:04:05.000000") }

func deref(s *string) string {
	if s == nil {
		return "(none)"
	}
	return *s
}

// NormJSON gives JSON text a canonical form so equal values compare equal.
func NormJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	out, _ := json.Marshal(v)
	return string(out)
}
