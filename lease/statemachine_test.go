package lease_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"pgregory.net/rapid"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/page"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// The state-machine test drives the lease, graph and attention services
// with random sequences of actions (create, depend, claim, heartbeat,
// complete, fail, release, ask, hold, resolve or dismiss, cancel, reap, let
// time pass, replay a stale fence) and after each one compares the real
// service with a small in-memory model of the rules: each item's state,
// epoch and holder, each lease's epoch, worker, expiry and outcome. Each run
// gets a project of its own on one test database; the clock is a stub the
// model reads.

// Rules the model knows, as configured below.
const (
	smTTL        = time.Minute
	smBackoff    = 10 * time.Second // RetryBackoff = MaxRetryBackoff: every retry waits this
	smWindow     = 5 * time.Minute  // continuity window
	smMaxFails   = 2
	smMaxExpired = 2
)

type smItem struct {
	id         uuid.UUID
	label      string
	status     graph.Status
	epoch      int64
	active     int   // index of the live lease, -1 when none
	blocking   int   // open blocking attention requests
	deps       []int // items this one depends on
	unmet      int
	failures   int
	notBefore  *time.Time
	expiries   int
	prefWorker string
	prefUntil  *time.Time // nil while the preference is pending
}

type smLease struct {
	id      uuid.UUID
	item    int
	epoch   int64
	worker  string
	expires time.Time
	outcome lease.Outcome // "" while unended
}

type smRequest struct {
	id       uuid.UUID
	item     int
	blocking bool
	open     bool
	hold     bool // a person's hold (the model's one person, "person")
}

type smModel struct {
	items    []*smItem
	leases   []*smLease
	requests []*smRequest
}

func (m *smModel) state(i *smItem, now time.Time) graph.State {
	switch {
	case i.status == graph.StatusDone:
		return graph.StateDone
	case i.status == graph.StatusCancelled:
		return graph.StateCancelled
	case i.active >= 0:
		return graph.StateLeased
	case i.blocking > 0:
		return graph.StateAttention
	case i.unmet > 0 || (i.notBefore != nil && i.notBefore.After(now)):
		return graph.StateBlocked
	}
	return graph.StateReady
}

// claimable: what ClaimItem's candidate query asks of an item.
func (m *smModel) claimable(i *smItem, worker string, now time.Time) bool {
	return m.state(i, now) == graph.StateReady &&
		(i.prefWorker == "" || i.prefWorker == worker || (i.prefUntil != nil && !i.prefUntil.After(now)))
}

// live: the fences' predicate.
func (m *smModel) live(l *smLease, now time.Time) bool {
	return l.outcome == "" && l.expires.After(now)
}

// hold opens a blocking request on the item: worker becomes the pending
// preference; a request without a worker keeps a pending one and drops a
// running window (HoldItemForAttention).
func (m *smModel) hold(i *smItem, worker string) {
	i.blocking++
	switch {
	case worker != "":
		i.prefWorker = worker
	case i.prefUntil != nil:
		i.prefWorker = ""
	}
	i.prefUntil = nil
}

// end ends a live lease as a worker's call does.
func (m *smModel) end(l *smLease, o lease.Outcome) *smItem {
	l.outcome = o
	it := m.items[l.item]
	it.active = -1
	it.expiries = 0
	return it
}

// finish marks the item done or cancelled and satisfies its dependents.
func (m *smModel) finish(it *smItem, st graph.Status) {
	it.status = st
	idx := slices.Index(m.items, it)
	for _, d := range m.items {
		for _, dep := range d.deps {
			if dep == idx && d.unmet > 0 {
				d.unmet--
			}
		}
	}
}

// reap ends every expired lease, as a claim does first.
func (m *smModel) reap(now time.Time) {
	for _, l := range m.leases {
		if l.outcome != "" || l.expires.After(now) {
			continue
		}
		l.outcome = lease.OutcomeExpired
		it := m.items[l.item]
		it.active = -1
		it.expiries++
		if it.expiries >= smMaxExpired {
			m.hold(it, "")
			m.requests = append(m.requests, &smRequest{item: l.item, blocking: true, open: true}) // id learned on compare
			it.expiries = 0
		}
	}
}

// reaches reports whether from waits for to through dependency edges.
func (m *smModel) reaches(from, to int) bool {
	seen := map[int]bool{}
	stack := []int{from}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n == to {
			return true
		}
		if seen[n] {
			continue
		}
		seen[n] = true
		stack = append(stack, m.items[n].deps...)
	}
	return false
}

var smWorkers = []string{"w1", "w2", "w3"}

func TestStateMachine(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{
		DefaultTTL: smTTL, RetryBackoff: smBackoff, MaxRetryBackoff: smBackoff,
		MaxFailures: smMaxFails, MaxExpiries: smMaxExpired,
	}).withWindow(smWindow)
	runs := 0
	rapid.Check(t, func(rt *rapid.T) {
		runs++
		p, err := f.graph.CreateProject(f.ctx, fmt.Sprintf("sm-%d", runs))
		if err != nil {
			rt.Fatal(err)
		}
		sm := &stateMachine{f: f, project: p.ID, m: &smModel{}}
		// Actions listed twice are drawn twice as often: claims, failures,
		// questions, answers and time, so short runs reach repeated expiries
		// and failures and the continuity window.
		rt.Repeat(map[string]func(*rapid.T){
			"create":     sm.create,
			"depend":     sm.depend,
			"claim":      sm.claim,
			"claim2":     sm.claim,
			"claim3":     sm.claim,
			"heartbeat":  sm.heartbeat,
			"complete":   sm.complete,
			"fail":       sm.fail,
			"fail2":      sm.fail,
			"release":    sm.release,
			"ask":        sm.ask,
			"ask2":       sm.ask,
			"resolve":    sm.resolve,
			"resolve2":   sm.resolve,
			"hold":       sm.hold,
			"cancel":     sm.cancel,
			"reap":       sm.reap,
			"time":       sm.advance,
			"time2":      sm.advance,
			"staleFence": sm.staleFence,
			"":           sm.compare,
		})
	})
}

type stateMachine struct {
	f       fixture
	project uuid.UUID
	m       *smModel
}

func (s *stateMachine) now() time.Time { return *s.f.clock.Now() }

func (s *stateMachine) pickItem(t *rapid.T, label string) (int, *smItem) {
	if len(s.m.items) == 0 {
		t.Skip("no items yet")
	}
	i := rapid.IntRange(0, len(s.m.items)-1).Draw(t, label)
	return i, s.m.items[i]
}

// pickLease draws a lease: mostly an unended one (the call a worker
// makes), sometimes any (a late or repeated call).
func (s *stateMachine) pickLease(t *rapid.T) (int, *smLease) {
	if len(s.m.leases) == 0 {
		t.Skip("no leases yet")
	}
	var unended []int
	for i, l := range s.m.leases {
		if l.outcome == "" {
			unended = append(unended, i)
		}
	}
	if len(unended) > 0 && rapid.IntRange(0, 3).Draw(t, "late") > 0 {
		i := rapid.SampledFrom(unended).Draw(t, "lease")
		return i, s.m.leases[i]
	}
	i := rapid.IntRange(0, len(s.m.leases)-1).Draw(t, "lease")
	return i, s.m.leases[i]
}

// wantCode fails unless err is of the code (none: nil).
func wantCode(t *rapid.T, op string, err error, code wgerr.Code) {
	t.Helper()
	switch {
	case code == "" && err != nil:
		t.Fatalf("%s: %v, model expected success", op, err)
	case code != "" && err == nil:
		t.Fatalf("%s succeeded, model expected %s", op, code)
	case code != "" && wgerr.CodeOf(err) != code:
		t.Fatalf("%s: %v (%s), model expected %s", op, err, wgerr.CodeOf(err), code)
	}
}

// smMaxItems keeps runs on a few items, so actions meet on them.
const smMaxItems = 3

func (s *stateMachine) create(t *rapid.T) {
	if len(s.m.items) >= smMaxItems {
		t.Skip("enough items")
	}
	label := fmt.Sprintf("i%d", len(s.m.items))
	it, err := s.f.graph.CreateItem(s.f.ctx, s.project, graph.NewItem{Title: label, Labels: []string{label}, CreatedBy: "sm"})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	s.m.items = append(s.m.items, &smItem{id: it.ID, label: label, status: graph.StatusOpen, active: -1})
}

func (s *stateMachine) depend(t *rapid.T) {
	a, ia := s.pickItem(t, "item")
	b, ib := s.pickItem(t, "dependsOn")
	err := s.f.graph.AddDependency(s.f.ctx, s.project, ia.id, ib.id, "sm")
	op := fmt.Sprintf("%s depends on %s", ia.label, ib.label)
	switch {
	case a == b:
		wantCode(t, op, err, wgerr.CodeDependencyCycle)
	case ia.status != graph.StatusOpen:
		wantCode(t, op, err, wgerr.CodeInvalid)
	case s.m.reaches(b, a):
		wantCode(t, op, err, wgerr.CodeDependencyCycle)
	case slices.Contains(ia.deps, b):
		wantCode(t, op, err, wgerr.CodeAlreadyExists)
	default:
		wantCode(t, op, err, "")
		ia.deps = append(ia.deps, b)
		if ib.status == graph.StatusOpen {
			ia.unmet++
		}
	}
}

func (s *stateMachine) claim(t *rapid.T) {
	i, it := s.pickItem(t, "item")
	worker := rapid.SampledFrom(smWorkers).Draw(t, "worker")
	now := s.now()
	s.m.reap(now)
	c, err := s.f.leases.Claim(s.f.ctx, s.project, lease.ClaimRequest{Worker: worker, Labels: []string{it.label}})
	op := fmt.Sprintf("claim %s by %s", it.label, worker)
	if !s.m.claimable(it, worker, now) {
		if !errors.Is(err, lease.ErrNothingReady) {
			t.Fatalf("%s: got %v (lease %+v), model expected nothing ready (state %s)", op, err, c.Lease, s.m.state(it, now))
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: %v, model expected a lease", op, err)
	}
	it.epoch++
	if c.Item.ID != it.id || c.Lease.Epoch != it.epoch || c.Lease.Worker != worker {
		t.Fatalf("%s: got item %s epoch %d worker %s, want %s epoch %d", op, c.Item.ID, c.Lease.Epoch, c.Lease.Worker, it.id, it.epoch)
	}
	if !c.Lease.ExpiresAt.Equal(now.Add(smTTL)) {
		t.Fatalf("%s: expires at %s, want %s (claim time + TTL)", op, c.Lease.ExpiresAt, now.Add(smTTL))
	}
	it.active = len(s.m.leases)
	it.prefWorker, it.prefUntil = "", nil
	s.m.leases = append(s.m.leases, &smLease{id: c.Lease.ID, item: i, epoch: c.Lease.Epoch, worker: worker, expires: c.Lease.ExpiresAt})
}

// fenceOf is the lease's own fence.
func fenceOf(l *smLease) lease.Fence { return lease.Fence{LeaseID: l.id, Epoch: l.epoch} }

func (s *stateMachine) heartbeat(t *rapid.T) {
	_, l := s.pickLease(t)
	now := s.now()
	res, err := s.f.leases.Heartbeat(s.f.ctx, s.project, fenceOf(l), lease.Heartbeat{})
	if !s.m.live(l, now) {
		wantCode(t, "heartbeat", err, wgerr.CodeLeaseLost)
		return
	}
	wantCode(t, "heartbeat", err, "")
	l.expires = now.Add(smTTL)
	if !res.Lease.ExpiresAt.Equal(l.expires) {
		t.Fatalf("heartbeat: expires at %s, want %s", res.Lease.ExpiresAt, l.expires)
	}
}

func resultOf(l *smLease) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"lease": %q}`, l.id))
}

func (s *stateMachine) complete(t *rapid.T) {
	_, l := s.pickLease(t)
	now := s.now()
	res, err := s.f.leases.Complete(s.f.ctx, s.project, fenceOf(l), resultOf(l), nil)
	switch {
	case l.outcome == lease.OutcomeCompleted:
		// A repeat of the same completion is answered as a replay.
		wantCode(t, "complete again", err, "")
		if !res.Replayed {
			t.Fatalf("a repeated completion was not a replay")
		}
	case !s.m.live(l, now):
		wantCode(t, "complete", err, wgerr.CodeLeaseLost)
	case s.m.items[l.item].unmet > 0:
		// A dependency added while the item was leased and not yet done
		// (ADR 0008): the completion is refused, the lease stays live.
		wantCode(t, "complete", err, wgerr.CodeBlocked)
	default:
		wantCode(t, "complete", err, "")
		s.m.finish(s.m.end(l, lease.OutcomeCompleted), graph.StatusDone)
	}
}

func (s *stateMachine) fail(t *rapid.T) {
	_, l := s.pickLease(t)
	now := s.now()
	res, err := s.f.leases.Fail(s.f.ctx, s.project, fenceOf(l), lease.Failure{Message: "boom"})
	if !s.m.live(l, now) {
		wantCode(t, "fail", err, wgerr.CodeLeaseLost)
		return
	}
	wantCode(t, "fail", err, "")
	it := s.m.end(l, lease.OutcomeFailed)
	it.failures++
	nb := now.Add(smBackoff)
	it.notBefore = &nb
	if it.failures >= smMaxFails {
		if res.Attention == nil {
			t.Fatalf("fail #%d: no attention request, model expected one", it.failures)
		}
		s.m.hold(it, "")
		s.m.requests = append(s.m.requests, &smRequest{id: res.Attention.ID, item: l.item, blocking: true, open: true})
		it.failures, it.notBefore = 0, nil
	} else if res.Attention != nil {
		t.Fatalf("fail #%d opened an attention request, model expected none", it.failures)
	}
}

func (s *stateMachine) release(t *rapid.T) {
	_, l := s.pickLease(t)
	_, err := s.f.leases.Release(s.f.ctx, s.project, fenceOf(l), "")
	if !s.m.live(l, s.now()) {
		wantCode(t, "release", err, wgerr.CodeLeaseLost)
		return
	}
	wantCode(t, "release", err, "")
	s.m.end(l, lease.OutcomeReleased)
}

func (s *stateMachine) ask(t *rapid.T) {
	_, l := s.pickLease(t)
	blocking := rapid.Bool().Draw(t, "blocking")
	res, err := s.f.leases.Ask(s.f.ctx, s.project, fenceOf(l), attention.NewRequest{Question: "which?", Blocking: blocking})
	if !s.m.live(l, s.now()) {
		wantCode(t, "ask", err, wgerr.CodeLeaseLost)
		return
	}
	wantCode(t, "ask", err, "")
	s.m.requests = append(s.m.requests, &smRequest{id: res.Request.ID, item: l.item, blocking: blocking, open: true})
	if blocking {
		it := s.m.end(l, lease.OutcomeAttentionRequested)
		s.m.hold(it, l.worker)
	}
}

func (s *stateMachine) resolve(t *rapid.T) {
	s.learnRequests(t)
	var open []*smRequest
	for _, r := range s.m.requests {
		// Requests of done items are left out (a completion leaves a
		// non-blocking request open); a cancel closed those of its item,
		// and answering one is refused.
		if s.m.items[r.item].status != graph.StatusDone {
			open = append(open, r)
		}
	}
	if len(open) == 0 {
		t.Skip("no requests on open items")
	}
	r := rapid.SampledFrom(open).Draw(t, "request")
	// A person answers or dismisses; either closes the request.
	var err error
	op := "resolve"
	if rapid.Bool().Draw(t, "dismiss") {
		op = "dismiss"
		_, err = s.f.att.Dismiss(s.f.ctx, s.project, r.id, "person", "")
	} else {
		_, err = s.f.att.Resolve(s.f.ctx, s.project, r.id, "go on", "person")
	}
	if !r.open {
		wantCode(t, op+" again", err, wgerr.CodeConflict)
		return
	}
	wantCode(t, op, err, "")
	r.open = false
	if r.blocking {
		it := s.m.items[r.item]
		it.blocking--
		if it.blocking == 0 && it.prefWorker != "" {
			u := s.now().Add(smWindow)
			it.prefUntil = &u
		}
	}
}

// hold is a person's hold: a blocking request without a worker, which
// leaves an active lease running.
func (s *stateMachine) hold(t *rapid.T) {
	i, it := s.pickItem(t, "item")
	r, err := s.f.att.Hold(s.f.ctx, s.project, it.id, "", "person")
	if it.status != graph.StatusOpen {
		wantCode(t, "hold", err, wgerr.CodeConflict)
		return
	}
	wantCode(t, "hold", err, "")
	// A person holds an item once: a hold of theirs still open is
	// answered again, and nothing changes.
	for _, held := range s.m.requests {
		if held.item == i && held.hold && held.open {
			if r.ID != held.id {
				t.Fatalf("hold again on %s = request %s, want the open hold %s", it.label, r.ID, held.id)
			}
			return
		}
	}
	s.m.hold(it, "")
	s.m.requests = append(s.m.requests, &smRequest{id: r.ID, item: i, blocking: true, open: true, hold: true})
}

func (s *stateMachine) cancel(t *rapid.T) {
	_, it := s.pickItem(t, "item")
	_, err := s.f.graph.Cancel(s.f.ctx, s.project, it.id, "person", "not needed")
	if it.status != graph.StatusOpen {
		wantCode(t, "cancel", err, wgerr.CodeConflict)
		return
	}
	wantCode(t, "cancel", err, "")
	if it.active >= 0 {
		// A lease nobody had reaped yet ends as the reaper would have
		// ended it (EndLeasesCancelled): expired once its time is up.
		l, outcome := s.m.leases[it.active], lease.OutcomeCancelled
		if !l.expires.After(s.now()) {
			outcome = lease.OutcomeExpired
		}
		s.m.end(l, outcome)
	}
	s.m.finish(it, graph.StatusCancelled)
	// Cancel dismisses the item's open requests in the same transaction.
	idx := slices.Index(s.m.items, it)
	for _, r := range s.m.requests {
		if r.item == idx {
			r.open = false
		}
	}
}

func (s *stateMachine) reap(t *rapid.T) {
	if _, err := s.f.leases.ReapExpired(s.f.ctx, s.project, 1000); err != nil {
		t.Fatalf("reap: %v", err)
	}
	s.m.reap(s.now())
}

func (s *stateMachine) advance(t *rapid.T) {
	d := rapid.SampledFrom([]time.Duration{time.Second, smBackoff + time.Second, smTTL + time.Second, smWindow + time.Second}).Draw(t, "by")
	s.f.clock.Advance(d)
}

// staleFence replays a lease mutation with a fence that is not the live
// one (an older or a newer epoch of the item): lease_lost, and nothing
// changes (compare checks the state after).
func (s *stateMachine) staleFence(t *rapid.T) {
	_, l := s.pickLease(t)
	epoch := l.epoch + rapid.SampledFrom([]int64{-1, 1}).Draw(t, "epochDelta")
	if epoch < 1 {
		t.Skip("no older epoch")
	}
	f := lease.Fence{LeaseID: l.id, Epoch: epoch}
	var err error
	switch rapid.IntRange(0, 2).Draw(t, "op") {
	case 0:
		_, err = s.f.leases.Heartbeat(s.f.ctx, s.project, f, lease.Heartbeat{})
	case 1:
		_, err = s.f.leases.Complete(s.f.ctx, s.project, f, resultOf(l), nil)
	default:
		_, err = s.f.leases.Release(s.f.ctx, s.project, f, "")
	}
	wantCode(t, "stale fence", err, wgerr.CodeLeaseLost)
}

// learnRequests gives the model's system requests (opened by the service
// after repeated expiries) their ids, in the order they were opened.
func (s *stateMachine) learnRequests(t *rapid.T) {
	for _, r := range s.m.requests {
		if r.id != uuid.Nil {
			continue
		}
		rsPage, err := s.f.att.ForItem(s.f.ctx, s.project, s.m.items[r.item].id, "", 500)
		rs := rsPage.Requests
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range rs {
			known := false
			for _, k := range s.m.requests {
				known = known || k.id == got.ID
			}
			if !known && got.Reason == attention.ReasonRepeatedExpiry {
				r.id = got.ID
				break
			}
		}
		if r.id == uuid.Nil {
			t.Fatalf("the model expected a repeated-expiry request on %s; there is none", s.m.items[r.item].label)
		}
	}
}

// compare checks every item and lease of the model against the services.
// It reads them in one call each (graph's Items, the lease History in
// pages), not one call per item and lease: compare runs after every
// action, and per-row reads were most of the test's round trips.
func (s *stateMachine) compare(t *rapid.T) {
	now := s.now()
	ids := make([]uuid.UUID, len(s.m.items))
	for i, mi := range s.m.items {
		ids[i] = mi.id
	}
	items := map[uuid.UUID]graph.Item{}
	if len(ids) > 0 {
		got, err := s.f.graph.Items(s.f.ctx, s.project, ids)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range got {
			items[it.ID] = it
		}
	}
	for _, mi := range s.m.items {
		it, ok := items[mi.id]
		if !ok {
			t.Fatalf("item %s: not found", mi.label)
		}
		if want := s.m.state(mi, now); it.State != want {
			t.Fatalf("item %s: state %s, model %s (%+v)", mi.label, it.State, want, *mi)
		}
		if it.Epoch != mi.epoch {
			t.Fatalf("item %s: epoch %d, model %d", mi.label, it.Epoch, mi.epoch)
		}
		var want *uuid.UUID
		if mi.active >= 0 {
			want = &s.m.leases[mi.active].id
		}
		if (it.ActiveLeaseID == nil) != (want == nil) || (want != nil && *it.ActiveLeaseID != *want) {
			t.Fatalf("item %s: active lease %v, model %v", mi.label, it.ActiveLeaseID, want)
		}
	}
	leases := map[uuid.UUID]lease.Lease{}
	for cursor := ""; ; {
		pg, err := s.f.leases.History(s.f.ctx, s.project, lease.HistoryFilter{Cursor: cursor, Limit: page.Max})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range pg.Leases {
			leases[l.ID] = l
		}
		if cursor = pg.NextCursor; cursor == "" {
			break
		}
	}
	// Every lease of the project is one the model holds, and the reverse.
	if len(leases) != len(s.m.leases) {
		t.Fatalf("the project has %d leases, model %d", len(leases), len(s.m.leases))
	}
	for _, ml := range s.m.leases {
		l, ok := leases[ml.id]
		if !ok {
			t.Fatalf("lease of %s at epoch %d: not found", s.m.items[ml.item].label, ml.epoch)
		}
		got := lease.Outcome("")
		if l.Outcome != nil {
			got = *l.Outcome
		}
		if got != ml.outcome || l.Epoch != ml.epoch || l.Worker != ml.worker || l.ItemID != s.m.items[ml.item].id {
			t.Fatalf("lease of %s at epoch %d: outcome %q epoch %d worker %s, model %q epoch %d worker %s",
				s.m.items[ml.item].label, ml.epoch, got, l.Epoch, l.Worker, ml.outcome, ml.epoch, ml.worker)
		}
		if ml.outcome == "" && !l.ExpiresAt.Equal(ml.expires) {
			t.Fatalf("lease of %s: expires %s, model %s", s.m.items[ml.item].label, l.ExpiresAt, ml.expires)
		}
	}
	// And what the model does not hold: no item has two unended leases.
	var n int
	if err := s.f.conn.QueryRow(s.f.ctx, `SELECT count(*) FROM (SELECT item_id FROM leases WHERE project_id = $1
		AND ended_at IS NULL GROUP BY item_id HAVING count(*) > 1) x`, s.project).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d items with two unended leases", n)
	}
}
