package attention_test

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// question is a blocking worker question with a deadline and a policy.
func question(due time.Duration, policy, def string) attention.NewRequest {
	return attention.NewRequest{Question: "left or right?", Blocking: true, Source: attention.SourceWorker,
		RequestedBy: "w1", Worker: "w1", DueIn: due, OnOverdue: policy, DefaultAnswer: def}
}

// overdueEvents returns the payloads of the attention.overdue events of r.
func (f fixture) overdueEvents(t *testing.T, r uuid.UUID) []map[string]any {
	t.Helper()
	rows, err := f.conn.Query(f.ctx, `SELECT payload, actor FROM events
		WHERE project_id = $1 AND attention_id = $2 AND type = 'attention.overdue' ORDER BY seq`, f.project, r)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []map[string]any
	for rows.Next() {
		var b []byte
		var actor string
		if err := rows.Scan(&b, &actor); err != nil {
			t.Fatal(err)
		}
		var p map[string]any
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		p["actor"] = actor
		out = append(out, p)
	}
	return out
}

func (f fixture) sweep(t *testing.T) int {
	t.Helper()
	n, err := attention.NewDeadlineSweeper(f.svc, 0, nil).RunOnce(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (f fixture) get(t *testing.T, id uuid.UUID) attention.Request {
	t.Helper()
	r, err := f.svc.Get(f.ctx, f.project, id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDeadlineFiresOnceAtItsInstant(t *testing.T) {
	t.Parallel()
	f := setup(t)
	item := f.item(t, "a")
	r := f.mustOpen(t, item, question(time.Minute, attention.OverdueEscalate, ""))
	if r.DueAt == nil || !r.DueAt.Equal(r.CreatedAt.Add(time.Minute)) {
		t.Fatalf("DueAt = %v, want created_at + 1m (%v)", r.DueAt, r.CreatedAt)
	}
	f.clock.Advance(59 * time.Second)
	if n := f.sweep(t); n != 0 {
		t.Fatalf("before the deadline: %d fired", n)
	}
	f.clock.Advance(time.Second)
	if n := f.sweep(t); n != 1 {
		t.Fatalf("at the deadline: %d fired, want 1", n)
	}
	if n := f.sweep(t); n != 0 {
		t.Fatalf("a second sweep fired %d again", n)
	}
	evs := f.overdueEvents(t, r.ID)
	if len(evs) != 1 || evs[0]["escalate"] != true || evs[0]["policy"] != "escalate" || evs[0]["actor"] != "system" {
		t.Fatalf("overdue events = %v, want one with escalate true by system", evs)
	}
	got := f.get(t, r.ID)
	if !got.Overdue() || got.State != attention.StateOpen || !got.Blocking {
		t.Fatalf("after escalation the request is %+v, want open, blocking, overdue", got)
	}
	// A person's answer after the deadline still counts.
	ans, err := f.svc.Resolve(f.ctx, f.project, r.ID, "left", "token:bob")
	if err != nil || ans.State != attention.StateResolved || ans.AnsweredByDefault {
		t.Fatalf("late answer: %+v, %v", ans, err)
	}
	if row := f.row(t, item); !row.Ready || row.OpenAttention != 0 {
		t.Fatalf("after the late answer the item is %+v, want ready", row)
	}
}

func TestDeadlineWithoutPolicyOnlyTellsIt(t *testing.T) {
	t.Parallel()
	f := setup(t)
	item := f.item(t, "a")
	r := f.mustOpen(t, item, question(time.Minute, "", ""))
	f.clock.Advance(2 * time.Minute)
	if n := f.sweep(t); n != 1 {
		t.Fatalf("%d fired, want 1", n)
	}
	if evs := f.overdueEvents(t, r.ID); len(evs) != 1 || evs[0]["escalate"] != false {
		t.Fatalf("overdue events = %v", evs)
	}
	if row := f.row(t, item); row.Ready || row.OpenAttention != 1 {
		t.Fatalf("the item is %+v, want still waiting", row)
	}
}

func TestDeadlineDefaultAnswer(t *testing.T) {
	t.Parallel()
	f := setup(t)
	item := f.item(t, "a")
	r := f.mustOpen(t, item, question(time.Minute, attention.OverdueDefaultAnswer, "right"))
	f.clock.Advance(2 * time.Minute)
	if n := f.sweep(t); n != 1 {
		t.Fatalf("%d fired, want 1", n)
	}
	got := f.get(t, r.ID)
	if got.State != attention.StateResolved || got.Answer == nil || *got.Answer != "right" ||
		got.ResolvedBy == nil || *got.ResolvedBy != "system" || !got.AnsweredByDefault {
		t.Fatalf("after the deadline: %+v, want resolved with the default answer by system", got)
	}
	// The item comes back for the worker that asked (the continuity
	// window), as after any answer.
	row := f.row(t, item)
	if !row.Ready || row.OpenAttention != 0 || row.PreferredWorker == nil || *row.PreferredWorker != "w1" {
		t.Fatalf("the item is %+v, want ready, reserved for w1", row)
	}
	var payload string
	if err := f.conn.QueryRow(f.ctx, `SELECT payload::text FROM events WHERE attention_id = $1 AND type = 'attention.answered'`, r.ID).Scan(&payload); err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal([]byte(payload), &p); err != nil || p["default_answer"] != true {
		t.Fatalf("the answered event = %s, want default_answer: true", payload)
	}
	// A person's answer after the default one: the request is answered.
	if _, err := f.svc.Resolve(f.ctx, f.project, r.ID, "left", "token:bob"); wgerr.CodeOf(err) != wgerr.CodeConflict {
		t.Fatalf("a person's answer after the default = %v, want conflict", err)
	}
}

func TestDeadlineRelease(t *testing.T) {
	t.Parallel()
	f := setup(t)
	item := f.item(t, "a")
	r := f.mustOpen(t, item, question(time.Minute, attention.OverdueRelease, ""))
	f.clock.Advance(2 * time.Minute)
	if n := f.sweep(t); n != 1 {
		t.Fatalf("%d fired, want 1", n)
	}
	got := f.get(t, r.ID)
	if got.State != attention.StateOpen || got.Blocking || !got.Overdue() {
		t.Fatalf("after the deadline: %+v, want open, not blocking", got)
	}
	if row := f.row(t, item); !row.Ready || row.OpenAttention != 0 || row.PreferredWorker != nil {
		t.Fatalf("the item is %+v, want ready for any worker", row)
	}
	// The question can still be answered; the item is not counted twice.
	if _, err := f.svc.Resolve(f.ctx, f.project, r.ID, "left", "token:bob"); err != nil {
		t.Fatal(err)
	}
	if row := f.row(t, item); !row.Ready || row.OpenAttention != 0 {
		t.Fatalf("after the late answer the item is %+v", row)
	}
}

func TestProjectDefaultDeadline(t *testing.T) {
	t.Parallel()
	f := setup(t)
	if _, err := f.conn.Exec(f.ctx, `UPDATE projects SET attention_due_ms = 3600000 WHERE id = $1`, f.project); err != nil {
		t.Fatal(err)
	}
	w := f.mustOpen(t, f.item(t, "a"), question(0, attention.OverdueEscalate, ""))
	if w.DueAt == nil || !w.DueAt.Equal(w.CreatedAt.Add(time.Hour)) {
		t.Fatalf("a worker's question: DueAt %v, want created + 1h", w.DueAt)
	}
	own := f.mustOpen(t, f.item(t, "b"), question(time.Minute, "", ""))
	if !own.DueAt.Equal(own.CreatedAt.Add(time.Minute)) {
		t.Fatalf("an ask's own due_in: DueAt %v", own.DueAt)
	}
	hold, err := f.svc.Hold(f.ctx, f.project, f.item(t, "c"), "wait", "token:bob")
	if err != nil || hold.DueAt != nil {
		t.Fatalf("a hold: DueAt %v, %v; want none", hold.DueAt, err)
	}
}

func TestDeadlineInput(t *testing.T) {
	t.Parallel()
	f := setup(t)
	item := f.item(t, "a")
	for name, in := range map[string]attention.NewRequest{
		"ErrNegativeDue":    question(-time.Second, "", ""),
		"ErrUnknownPolicy":  question(time.Minute, "panic", ""),
		"ErrDefaultWithout": question(time.Minute, attention.OverdueDefaultAnswer, ""),
		// A default answer no policy applies would be kept and never used:
		// the worker meant on_overdue default_answer and forgot it.
		"ErrDefaultWithoutPolicy":  question(time.Minute, "", "no"),
		"ErrDefaultWithEscalation": question(time.Minute, attention.OverdueEscalate, "no"),
		"ErrDefaultWithRelease":    question(time.Minute, attention.OverdueRelease, "no"),
		"ErrReleaseNonBlocking":    {Question: "q", Source: attention.SourceWorker, RequestedBy: "w1", DueIn: time.Minute, OnOverdue: attention.OverdueRelease},
		"ErrPolicyWithoutDue":      {Question: "q", Blocking: true, Source: attention.SourceWorker, RequestedBy: "w1", OnOverdue: attention.OverdueEscalate},
	} {
		if _, err := f.open(t, item, in); wgerr.CodeOf(err) != wgerr.CodeInvalid {
			t.Errorf("%s: %v, want invalid_argument", name, err)
		}
	}
}

// TestDeadlineFiresOnceWithTwoSweepers: sweepers racing on the same
// requests mark each once. A database of its own: the sweepers run
// concurrent transactions.
func TestDeadlineFiresOnceWithTwoSweepers(t *testing.T) {
	t.Parallel()
	f := setupDB(t)
	const n = 40
	var ids []uuid.UUID
	for i := 0; i < n; i++ {
		ids = append(ids, f.mustOpen(t, f.item(t, "a"), question(time.Minute, attention.OverdueRelease, "")).ID)
	}
	f.clock.Advance(2 * time.Minute)
	var wg sync.WaitGroup
	fired := make([]int, 2)
	errs := make([]error, 2)
	for i := range fired {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s := attention.NewDeadlineSweeper(f.svc, 0, nil)
			for k := 0; k < 5; k++ {
				m, err := s.RunOnce(f.ctx)
				fired[i] += m
				if err != nil {
					errs[i] = err
					return
				}
			}
		}(i)
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	if fired[0]+fired[1] != n {
		t.Fatalf("the sweepers fired %d + %d, want %d in all", fired[0], fired[1], n)
	}
	for _, id := range ids {
		if evs := f.overdueEvents(t, id); len(evs) != 1 {
			t.Fatalf("request %s: %d overdue events, want 1", id, len(evs))
		}
	}
}

// TestDeadlineSweeperService: started, it sweeps (its test signal).
func TestDeadlineSweeperService(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.mustOpen(t, f.item(t, "a"), question(time.Minute, "", ""))
	f.clock.Advance(time.Hour)
	s := attention.NewDeadlineSweeper(f.svc, time.Millisecond, nil)
	s.TestSignals.Fired.Init()
	s.Start(f.ctx)
	if n := s.TestSignals.Fired.Wait(t); n != 1 {
		t.Errorf("first sweep fired %d, want 1", n)
	}
	s.Stop()
}

// TestDeadlineObserved: the observer is told of each deadline fired once,
// with its request's policy ("" for none), and of nothing before.
func TestDeadlineObserved(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.mustOpen(t, f.item(t, "a"), question(time.Minute, attention.OverdueEscalate, ""))
	f.mustOpen(t, f.item(t, "b"), question(time.Minute, "", ""))
	f.mustOpen(t, f.item(t, "c"), question(time.Hour, attention.OverdueRelease, ""))
	w := attention.NewDeadlineSweeper(f.svc, 0, nil)
	told := map[string]int{}
	w.Observe(func(policy string) { told[policy]++ })
	f.clock.Advance(time.Minute)
	for range 2 {
		if _, err := w.RunOnce(f.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(told) != 2 || told[attention.OverdueEscalate] != 1 || told[""] != 1 {
		t.Fatalf("told %v, want escalate and none once each (the release is not due)", told)
	}
}
