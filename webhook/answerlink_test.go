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

// hook makes a webhook of project naming recipient (the sender of the
// links made out to them) and returns its id.
func (s linkSetup) hook(t *testing.T, project uuid.UUID, recipient string) uuid.UUID {
	t.Helper()
	w, err := webhook.NewService(s.tx, s.clk, false).Create(context.Background(), project,
		webhook.New{URL: "https://hooks.example.com/" + recipient, Recipient: &recipient, CreatedBy: "token:lead"})
	if err != nil {
		t.Fatal(err)
	}
	return w.ID
}

func TestAnswerLinks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		s := setupLinks(t)
		p := s.project(t)
		r := mustRequest(t, s.tx, p, "Which region?")
		token, link, err := s.links.Issue(ctx, p, r.ID, s.hook(t, p, "alice"), "alice", 24*time.Hour)
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
		token, _, err := s.links.Issue(ctx, p, r.ID, s.hook(t, p, "alice"), "alice", time.Hour)
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
		token, _, err := s.links.Issue(ctx, p, r.ID, s.hook(t, p, "alice"), "alice", time.Hour)
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
		token, _, err := s.links.Issue(ctx, p, r.ID, s.hook(t, p, "alice"), "alice", time.Hour)
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
		token, _, err := s.links.Issue(ctx, p, r.ID, s.hook(t, p, "alice"), "alice", time.Hour)
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
		token, _, err := s.links.Issue(ctx, p, r.ID, s.hook(t, p, "alice"), "alice", time.Hour)
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
	// Deleting the webhook that sent a link, or changing its recipient,
	// revokes the link: the statement that spends it refuses it, and the
	// page is told why. A link of another webhook naming the same
	// recipient is not touched.
	revoked := func(t *testing.T, revoke func(s linkSetup, p, hook uuid.UUID), want error) {
		t.Helper()
		s := setupLinks(t)
		p := s.project(t)
		r := mustRequest(t, s.tx, p, "Which region?")
		hook, kept := s.hook(t, p, "alice"), s.hook(t, p, "alice")
		token, _, err := s.links.Issue(ctx, p, r.ID, hook, "alice", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		keptToken, _, err := s.links.Issue(ctx, p, r.ID, kept, "alice", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		revoke(s, p, hook)
		link, _, err := s.links.Open(ctx, p, token)
		if !errors.Is(err, want) || link.Usable {
			t.Fatalf("Open = %+v, %v; want %v", link, err, want)
		}
		_, err = s.links.Answer(ctx, p, token, r.ID, "eu")
		if !errors.Is(err, want) || !errors.Is(err, wgerr.Conflict) {
			t.Fatalf("Answer = %v, want %v (conflict)", err, want)
		}
		var used *time.Time
		if err := s.tx.QueryRow(ctx, `SELECT used_at FROM answer_links WHERE project_id = $1 AND attention_id = $2 AND webhook_id = $3`,
			p, r.ID, hook).Scan(&used); err != nil || used != nil {
			t.Fatalf("the revoked link: used_at %v, %v; want unspent", used, err)
		}
		if got, _ := s.att.Get(ctx, p, r.ID); got.State != attention.StateOpen {
			t.Fatalf("a revoked link changed the request: %+v", got)
		}
		if _, err := s.links.Answer(ctx, p, keptToken, r.ID, "eu"); err != nil {
			t.Fatalf("the other webhook's link: %v", err)
		}
	}
	t.Run("ErrLinkWebhookDeleted", func(t *testing.T) {
		t.Parallel()
		revoked(t, func(s linkSetup, p, hook uuid.UUID) {
			if err := webhook.NewService(s.tx, s.clk, false).Delete(ctx, p, hook); err != nil {
				t.Fatal(err)
			}
		}, webhook.ErrLinkWebhookDeleted)
	})
	t.Run("ErrLinkRecipientChanged", func(t *testing.T) {
		t.Parallel()
		revoked(t, func(s linkSetup, p, hook uuid.UUID) {
			bob := "bob"
			if _, err := webhook.NewService(s.tx, s.clk, false).Update(ctx, p, hook,
				webhook.Change{SetRecipient: true, Recipient: &bob}); err != nil {
				t.Fatal(err)
			}
		}, webhook.ErrLinkRecipientChanged)
	})
	t.Run("ErrLinkRecipientRemoved", func(t *testing.T) {
		t.Parallel()
		revoked(t, func(s linkSetup, p, hook uuid.UUID) {
			if _, err := webhook.NewService(s.tx, s.clk, false).Update(ctx, p, hook,
				webhook.Change{SetRecipient: true}); err != nil {
				t.Fatal(err)
			}
		}, webhook.ErrLinkRecipientChanged)
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
