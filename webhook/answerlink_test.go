package webhook_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/webhook"
	"github.com/workgraph-dev/workgraph/wgerr"
)

type linkSetup struct {
	tx    pgx.Tx
	clk   *clock.Stub
	links *webhook.AnswerLinks
	att   *attention.Service
}

func setupLinks(t *testing.T) linkSetup {
	t.Helper()
	tx := dbtest.TestTx(t)
	var now time.Time
	if err := tx.QueryRow(context.Background(), "SELECT now()").Scan(&now); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewStub(now)
	att := attention.NewService(tx, clk, attention.Config{})
	return linkSetup{tx: tx, clk: clk, att: att, links: webhook.NewAnswerLinks(tx, clk, att)}
}

// project makes a project with answer links turned on, as a project must
// have them for the deliverer to issue one.
func (s linkSetup) project(t *testing.T) uuid.UUID {
	t.Helper()
	p := mustProject(t, s.tx)
	if _, err := s.links.SetSettings(context.Background(), p, webhook.Settings{AnswerLinks: true}); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAnswerLinks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		s := setupLinks(t)
		p := s.project(t)
		r := mustRequest(t, s.tx, p, "Which region?")
		token, link, err := s.links.Issue(ctx, p, r.ID, "alice", 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if got, req, err := s.links.Open(ctx, p, token); err != nil || got.ID != link.ID || req.ID != r.ID || !got.Usable {
			t.Fatalf("Open = %+v, %+v, %v", got, req, err)
		}
		res, err := s.links.Answer(ctx, p, token, r.ID, "eu-west-1")
		if err != nil {
			t.Fatal(err)
		}
		if res.State != attention.StateResolved || res.Answer == nil || *res.Answer != "eu-west-1" ||
			res.ResolvedBy == nil || *res.ResolvedBy != webhook.AnsweredBy("alice") {
			t.Fatalf("answered through the link: %+v", res)
		}
	})
	t.Run("ErrLinkUsed", func(t *testing.T) {
		t.Parallel()
		s := setupLinks(t)
		p := s.project(t)
		r := mustRequest(t, s.tx, p, "Which region?")
		token, _, err := s.links.Issue(ctx, p, r.ID, "alice", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.links.Answer(ctx, p, token, r.ID, "eu"); err != nil {
			t.Fatal(err)
		}
		_, err = s.links.Answer(ctx, p, token, r.ID, "us")
		if !errors.Is(err, webhook.ErrLinkUsed) || !errors.Is(err, wgerr.Conflict) {
			t.Fatalf("second use = %v, want ErrLinkUsed (conflict)", err)
		}
		if _, _, err := s.links.Open(ctx, p, token); !errors.Is(err, webhook.ErrLinkUsed) {
			t.Fatalf("Open of a used link = %v", err)
		}
		if got, _ := s.att.Get(ctx, p, r.ID); *got.Answer != "eu" {
			t.Fatalf("the answer is %q, want the first (eu)", *got.Answer)
		}
	})
	t.Run("ErrLinkExpired", func(t *testing.T) {
		t.Parallel()
		s := setupLinks(t)
		p := s.project(t)
		r := mustRequest(t, s.tx, p, "Which region?")
		token, _, err := s.links.Issue(ctx, p, r.ID, "alice", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		s.clk.Advance(time.Hour + time.Second)
		if _, err := s.links.Answer(ctx, p, token, r.ID, "eu"); !errors.Is(err, webhook.ErrLinkExpired) {
			t.Fatalf("Answer after expiry = %v, want ErrLinkExpired", err)
		}
		if got, _ := s.att.Get(ctx, p, r.ID); got.State != attention.StateOpen {
			t.Fatalf("an expired link changed the request: %+v", got)
		}
	})
	t.Run("ErrLinkOtherRequest", func(t *testing.T) {
		t.Parallel()
		s := setupLinks(t)
		p := s.project(t)
		r := mustRequest(t, s.tx, p, "Which region?")
		other := mustRequest(t, s.tx, p, "Which size?")
		token, _, err := s.links.Issue(ctx, p, r.ID, "alice", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.links.Answer(ctx, p, token, other.ID, "xl"); !errors.Is(err, webhook.ErrLinkOtherRequest) {
			t.Fatalf("Answer of another request = %v, want ErrLinkOtherRequest", err)
		}
		if got, _ := s.att.Get(ctx, p, other.ID); got.State != attention.StateOpen {
			t.Fatalf("the other request changed: %+v", got)
		}
		// The refusal rolled back: the link still answers its own request.
		if _, err := s.links.Answer(ctx, p, token, r.ID, "eu"); err != nil {
			t.Fatalf("the link after a refused use: %v", err)
		}
	})
	t.Run("ErrLinkInvalid", func(t *testing.T) {
		t.Parallel()
		s := setupLinks(t)
		p := s.project(t)
		r := mustRequest(t, s.tx, p, "Which region?")
		token, _, err := s.links.Issue(ctx, p, r.ID, "alice", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		forged := token[:len(token)-4] + "AAAA"
		for _, bad := range []string{forged, "nonsense", token + "x"} {
			if _, err := s.links.Answer(ctx, p, bad, r.ID, "eu"); !errors.Is(err, webhook.ErrLinkInvalid) {
				t.Errorf("Answer with %q = %v, want ErrLinkInvalid", bad, err)
			}
		}
		otherProject := mustProject(t, s.tx)
		if _, _, err := s.links.Open(ctx, otherProject, token); !errors.Is(err, webhook.ErrLinkInvalid) {
			t.Fatalf("Open in another project = %v, want ErrLinkInvalid", err)
		}
	})
	t.Run("ErrLinksTurnedOff", func(t *testing.T) {
		// Turning answer links off stops the links already sent (a channel
		// found less private than the questions): none answers while they
		// are off, and the request stays open.
		t.Parallel()
		s := setupLinks(t)
		p := s.project(t)
		r := mustRequest(t, s.tx, p, "Which region?")
		token, _, err := s.links.Issue(ctx, p, r.ID, "alice", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.links.SetSettings(ctx, p, webhook.Settings{AnswerLinks: false}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.links.Open(ctx, p, token); !errors.Is(err, webhook.ErrLinksOff) {
			t.Fatalf("Open with answer links off = %v, want ErrLinksOff", err)
		}
		_, err = s.links.Answer(ctx, p, token, r.ID, "eu")
		if !errors.Is(err, webhook.ErrLinksOff) || !errors.Is(err, wgerr.Conflict) {
			t.Fatalf("Answer with answer links off = %v, want ErrLinksOff (conflict)", err)
		}
		if got, _ := s.att.Get(ctx, p, r.ID); got.State != attention.StateOpen {
			t.Fatalf("a link of a project with answer links off changed the request: %+v", got)
		}
	})
}

func TestNotificationSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupLinks(t)
	p := mustProject(t, s.tx)
	got, err := s.links.Settings(ctx, p)
	if err != nil || got.AnswerLinks || got.AnswerLinkTTL != webhook.DefaultAnswerLinkTTL {
		t.Fatalf("defaults = %+v, %v; want answer links off, 24 h", got, err)
	}
	if _, err := s.links.SetSettings(ctx, p, webhook.Settings{AnswerLinks: true, AnswerLinkTTL: time.Second}); !errors.Is(err, wgerr.Invalid) {
		t.Fatalf("a 1 s TTL = %v, want invalid_argument", err)
	}
	if _, err := s.links.SetSettings(ctx, p, webhook.Settings{AnswerLinks: true, AnswerLinkTTL: 2 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.links.Settings(ctx, p); !got.AnswerLinks || got.AnswerLinkTTL != 2*time.Hour {
		t.Fatalf("after setting: %+v", got)
	}
}
