package lease_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// questions opens n answered questions about an item, as people's holds
// would leave them (the claim's history counts every request of the
// item), and returns their ids, oldest first.
func (f fixture) questions(t testing.TB, item uuid.UUID, n int) []uuid.UUID {
	t.Helper()
	ids := make([]uuid.UUID, n)
	for i := range ids {
		r, err := f.att.Open(f.ctx, f.project, item, attention.NewRequest{
			Question: fmt.Sprintf("question %d", i), Source: attention.SourcePerson, RequestedBy: "alice",
		})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		f.resolve(t, r, fmt.Sprintf("answer %d", i))
		ids[i] = r.ID
	}
	return ids
}

func requestIDs(rs []attention.Request) []uuid.UUID {
	out := make([]uuid.UUID, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

// TestClaimHistoryBounded: a claim hands over the latest ClaimHistory
// requests of its item, oldest first, and says that older ones exist;
// the batch claim's entries the same.
func TestClaimHistoryBounded(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	long := f.item(t, graph.NewItem{Title: "long", Labels: []string{"long"}})
	short := f.item(t, graph.NewItem{Title: "short", Labels: []string{"short"}})
	longIDs := f.questions(t, long.ID, lease.ClaimHistory+5)
	shortIDs := f.questions(t, short.ID, 3)
	want := map[uuid.UUID]struct {
		ids   []uuid.UUID
		older bool
	}{
		long.ID:  {longIDs[5:], true},
		short.ID: {shortIDs, false},
	}
	check := func(t *testing.T, c lease.Claim) {
		t.Helper()
		w := want[c.Item.ID]
		if got := requestIDs(c.Attention); fmt.Sprint(got) != fmt.Sprint(w.ids) || c.OlderAttention != w.older {
			t.Fatalf("claim of %q: %d requests (older %v), want the latest %d (older %v)",
				c.Item.Title, len(got), c.OlderAttention, len(w.ids), w.older)
		}
	}

	t.Run("Claim", func(t *testing.T) {
		for _, label := range []string{"long", "short"} {
			c := f.claimLabels(t, "w", []string{label})
			check(t, c)
			if _, err := f.leases.Release(f.ctx, f.project, fence(c.Lease), ""); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("Batch", func(t *testing.T) {
		cs, err := f.leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: "w"}, 10)
		if err != nil || len(cs) != 2 {
			t.Fatalf("ClaimBatch = %d claims, %v; want both items", len(cs), err)
		}
		for _, c := range cs {
			check(t, c)
		}
	})
}

// TestAskOpenBound: a lease may have MaxOpenQuestions open non-blocking
// questions; one more is refused with too_many_open_requests and changes
// nothing, until a person answers one. A blocking question is never
// refused for it (it ends the lease).
func TestAskOpenBound(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	it, l := f.claimNew(t, "w")
	var asked []attention.Request
	for range lease.MaxOpenQuestions {
		asked = append(asked, f.ask(t, l, "May I?", false).Request)
	}

	before := f.snapshot(t, it.ID)
	_, err := f.leases.Ask(f.ctx, f.project, fence(l), attention.NewRequest{Question: "One more?"})
	var we *wgerr.Error
	if !errors.As(err, &we) || we.Code != wgerr.CodeTooManyOpenRequests || we.Details["max_open_requests"] != lease.MaxOpenQuestions {
		t.Fatalf("ask past the bound: err = %v, want too_many_open_requests naming %d", err, lease.MaxOpenQuestions)
	}
	if after := f.snapshot(t, it.ID); after != before {
		t.Fatalf("a refused ask changed the item, its leases or its requests:\n%s\n%s", before, after)
	}

	f.resolve(t, asked[0], "yes")
	f.ask(t, l, "Once answered, another?", false)
	if _, err := f.leases.Ask(f.ctx, f.project, fence(l), attention.NewRequest{Question: "And one more?"}); wgerr.CodeOf(err) != wgerr.CodeTooManyOpenRequests {
		t.Fatalf("ask past the bound again: err = %v, want too_many_open_requests", err)
	}
	res := f.ask(t, l, "Blocking, then?", true)
	if res.Lease.EndedAt == nil || !res.Request.Blocking {
		t.Fatalf("a blocking ask at the bound = %+v, want the lease ended for it", res)
	}
}

// TestAskOpenBoundRace: concurrent asks of one lease never pass the bound.
// A database of its own: the asks run concurrently, each committing.
func TestAskOpenBoundRace(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{})
	_, l := f.claimNew(t, "w")
	const askers = 2 * lease.MaxOpenQuestions
	var wg sync.WaitGroup
	errs := make(chan error, askers)
	start := make(chan struct{})
	for i := range askers {
		wg.Go(func() {
			<-start
			_, err := f.leases.Ask(f.ctx, f.project, fence(l), attention.NewRequest{Question: fmt.Sprintf("question %d", i)})
			errs <- err
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	granted, refused := 0, 0
	for err := range errs {
		switch {
		case err == nil:
			granted++
		case wgerr.CodeOf(err) == wgerr.CodeTooManyOpenRequests:
			refused++
		default:
			t.Errorf("ask: %v", err)
		}
	}
	var open int
	if err := f.conn.QueryRow(f.ctx, `SELECT count(*) FROM attention_requests
		WHERE project_id = $1 AND lease_id = $2 AND state = 'open' AND NOT blocking`, f.project, l.ID).Scan(&open); err != nil {
		t.Fatal(err)
	}
	if granted != lease.MaxOpenQuestions || refused != askers-lease.MaxOpenQuestions || open != lease.MaxOpenQuestions {
		t.Fatalf("%d asks granted, %d refused, %d open; want %d granted and open, %d refused",
			granted, refused, open, lease.MaxOpenQuestions, askers-lease.MaxOpenQuestions)
	}
}

// TestHeartbeatAnswersBounded: a heartbeat hands back the lease's newest
// attention.AnswersPerHeartbeat answered questions, oldest first, and says
// that older ones exist; the batch heartbeat's entries the same. The open
// bound (MaxOpenQuestions) does not bound the answered ones: a worker that
// asks and has its questions answered, one after another, collects them
// without end, and before the bound every heartbeat answered them all.
func TestHeartbeatAnswersBounded(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	f.items(t, 1)
	l := f.claim(t, "w").Lease
	n := attention.AnswersPerHeartbeat + 5
	ids := make([]uuid.UUID, n)
	for i := range ids {
		r := f.ask(t, l, fmt.Sprintf("question %d", i), false).Request
		f.resolve(t, r, "yes")
		ids[i] = r.ID
	}
	// One more, still open: not an answer.
	f.ask(t, l, "still open", false)

	res, err := f.leases.Heartbeat(f.ctx, f.project, fence(l), lease.Heartbeat{})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint(ids[5:])
	if got := fmt.Sprint(requestIDs(res.Answers)); got != want || !res.OlderAnswers {
		t.Errorf("heartbeat: %d answers (older %v), want the newest %d, oldest first (older true)",
			len(res.Answers), res.OlderAnswers, attention.AnswersPerHeartbeat)
	}
	batch, err := f.leases.HeartbeatBatch(f.ctx, f.project, nil, []lease.HeartbeatEntry{{Fence: fence(l)}})
	if err != nil {
		t.Fatal(err)
	}
	if r := batch[0].Result; batch[0].Err != nil || fmt.Sprint(requestIDs(r.Answers)) != want || !r.OlderAnswers {
		t.Errorf("batch heartbeat: %v, %d answers (older %v), want the newest %d (older true)",
			batch[0].Err, len(r.Answers), r.OlderAnswers, attention.AnswersPerHeartbeat)
	}

	// A lease with fewer answers gets them all, and no older ones.
	f.items(t, 1)
	short := f.claim(t, "w2").Lease
	r := f.ask(t, short, "only one", false).Request
	f.resolve(t, r, "no")
	res, err = f.leases.Heartbeat(f.ctx, f.project, fence(short), lease.Heartbeat{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Answers) != 1 || res.Answers[0].ID != r.ID || res.OlderAnswers {
		t.Errorf("heartbeat of a lease with one answer: %d answers (older %v), want 1 (older false)", len(res.Answers), res.OlderAnswers)
	}
}
