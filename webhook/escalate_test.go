package webhook_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/webhook"
)

// TestDeliverOverdueEscalation: a question with a deadline and the
// escalate policy notifies the team's webhook when it is asked and, once
// the deadline passes (a stub clock), a second webhook subscribed to
// attention.overdue, with escalate set; the first hears nothing more.
func TestDeliverOverdueEscalation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupDelivery(t)
	team, escalation := newReceiver(t, nil), newReceiver(t, nil)
	s.webhook(t, webhook.New{URL: team.URL, EventTypes: []string{events.AttentionOpened}})
	second := s.webhook(t, webhook.New{URL: escalation.URL, EventTypes: []string{events.AttentionOverdue}})

	var t0 time.Time
	if err := s.pool.QueryRow(ctx, "SELECT now()").Scan(&t0); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewStub(t0)
	svc := attention.NewService(s.pool, clk, attention.Config{})
	it, err := graph.NewService(s.pool, nil).CreateItem(ctx, s.project, graph.NewItem{Title: "Ship the release", CreatedBy: "token:lead"})
	if err != nil {
		t.Fatal(err)
	}
	var r attention.Request
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		r, err = svc.On(tx).Open(ctx, s.project, it.ID, attention.NewRequest{Question: "left or right?", Blocking: true,
			RequestedBy: "w1", DueIn: time.Minute, OnOverdue: attention.OverdueEscalate})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	d := s.deliverer(webhook.DelivererConfig{})
	runUntil(t, d, func() bool { return len(team.got()) >= 1 })
	if n := len(escalation.got()); n != 0 {
		t.Fatalf("the escalation webhook got %d requests before the deadline", n)
	}

	clk.Advance(2 * time.Minute)
	if n, err := attention.NewDeadlineSweeper(svc, 0, nil).RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("the sweep fired %d deadlines (%v), want 1", n, err)
	}
	runUntil(t, d, func() bool { return s.settled(t, second.ID) })
	hits := escalation.got()
	if len(hits) != 1 {
		t.Fatalf("the escalation webhook got %d requests, want 1", len(hits))
	}
	var m struct {
		Type string `json:"type"`
		Data struct {
			AttentionID string         `json:"attention_id"`
			Payload     map[string]any `json:"payload"`
		} `json:"data"`
	}
	if err := json.Unmarshal(hits[0].body, &m); err != nil {
		t.Fatal(err)
	}
	if m.Type != events.AttentionOverdue || m.Data.AttentionID != r.ID.String() || m.Data.Payload["escalate"] != true {
		t.Fatalf("the escalation webhook got %s, want attention.overdue of %s with escalate true", hits[0].body, r.ID)
	}
	if n := len(team.got()); n != 1 {
		t.Fatalf("the team's webhook got %d requests, want only the question's", n)
	}
}

// TestDeliverOverdueDefaultAnsweredAsSlack: the Slack message of a
// deadline that a default answer closed says so, not that the asker is
// still waiting (the sweep answers it in the deadline's transaction, so
// the message finds it answered): a person would look for a question that
// needs nobody.
func TestDeliverOverdueDefaultAnsweredAsSlack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupDelivery(t)
	rc := newReceiver(t, nil)
	s.webhook(t, webhook.New{URL: rc.URL, Format: webhook.FormatSlack, EventTypes: []string{events.AttentionOverdue}})
	var t0 time.Time
	if err := s.pool.QueryRow(ctx, "SELECT now()").Scan(&t0); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewStub(t0)
	svc := attention.NewService(s.pool, clk, attention.Config{})
	it, err := graph.NewService(s.pool, nil).CreateItem(ctx, s.project, graph.NewItem{Title: "Ship the release", CreatedBy: "token:lead"})
	if err != nil {
		t.Fatal(err)
	}
	err = db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := svc.On(tx).Open(ctx, s.project, it.ID, attention.NewRequest{Question: "left or right?", Blocking: true,
			RequestedBy: "w1", DueIn: time.Minute, OnOverdue: attention.OverdueDefaultAnswer, DefaultAnswer: "left"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Minute)
	if n, err := attention.NewDeadlineSweeper(svc, 0, nil).RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("the sweep fired %d deadlines (%v), want 1", n, err)
	}
	d := s.deliverer(webhook.DelivererConfig{PublicURL: "https://wg.example.com/", Attention: svc})
	runUntil(t, d, func() bool { return len(rc.got()) >= 1 })
	var m struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(rc.got()[0].body, &m); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(m.Text, "still waiting") || !strings.Contains(m.Text, "answered by default") {
		t.Fatalf("text %q: want the deadline's default answer, not a question still waiting", m.Text)
	}
}
