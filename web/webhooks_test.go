package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/webhook"
)

func TestWebhooksPages(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	c, err := e.hooks.Create(ctx, e.project.ID, webhook.New{URL: "https://hooks.example.com/acme", CreatedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	human := e.signIn(e.human)
	// The navigation leads there from every page of the project.
	wantBody(t, human.get("/p/acme/items"), `<a href="/p/acme/webhooks">Webhooks</a>`)
	r := human.get("/p/acme/webhooks")
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, "https://hooks.example.com/acme", "/p/acme/webhooks/"+c.ID.String(),
		`<a href="/p/acme/webhooks" aria-current="page">Webhooks</a>`)
	if strings.Contains(r.body, "webhooks-disabled") {
		t.Fatal("a notice of disabled webhooks while none is")
	}
	r = human.get("/p/acme/webhooks/" + c.ID.String())
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, "Recent deliveries", "Nothing delivered yet")

	// Delivery disabled it after a day of failures: every page of the
	// project says so, with the way to it.
	if _, err := e.pool.Exec(ctx, `UPDATE webhooks SET enabled = false, disabled_reason = 'failing', disabled_at = now(),
		failing_since = now() - interval '1 day' WHERE id = $1`, c.ID); err != nil {
		t.Fatal(err)
	}
	r = human.get("/p/acme/inbox")
	wantBody(t, r, `id="webhooks-disabled"`, "stopped after failing for a day", "/p/acme/webhooks/"+c.ID.String())
	r = human.get("/p/acme/webhooks/" + c.ID.String())
	wantBody(t, r, "Enable again")
	r = human.post("/p/acme/webhooks/"+c.ID.String()+"/enable", nil)
	wantStatus(t, r, http.StatusSeeOther)
	if w, _ := e.hooks.Get(ctx, e.project.ID, c.ID); !w.Enabled || w.DisabledReason != nil {
		t.Fatalf("after Enable again: %+v", w)
	}
	if r := human.get("/p/acme/inbox"); strings.Contains(r.body, "webhooks-disabled") {
		t.Fatal("the notice stays after the webhook was enabled")
	}
}

func TestAnswerLinkPage(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	it := e.mustItem("Ship it")
	req, err := e.att.Hold(ctx, e.project.ID, it.ID, "Which **region**?", "token:lead")
	if err != nil {
		t.Fatal(err)
	}
	other, err := e.att.Hold(ctx, e.project.ID, e.mustItem("Other").ID, "Which size?", "token:lead")
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := e.links.Issue(ctx, e.project.ID, req.ID, "alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	path := "/answer/" + e.project.ID.String() + "/" + token
	b := e.browser() // no session

	r := b.get(path)
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, "<strong>region</strong>", "For <b>alice</b>", `name="attention_id" value="`+req.ID.String()+`"`)

	t.Run("ErrLinkOtherRequest", func(t *testing.T) {
		r := b.post(path, url.Values{"attention_id": {other.ID.String()}, "answer": {"xl"}})
		wantStatus(t, r, http.StatusForbidden)
		if got, _ := e.att.Get(ctx, e.project.ID, other.ID); got.State != attention.StateOpen {
			t.Fatalf("the other request changed: %+v", got)
		}
	})
	r = b.post(path, url.Values{"attention_id": {req.ID.String()}, "answer": {"eu-west-1"}})
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, `id="answered"`, webhook.AnsweredBy("alice"))
	got, _ := e.att.Get(ctx, e.project.ID, req.ID)
	if got.State != attention.StateResolved || *got.Answer != "eu-west-1" || *got.ResolvedBy != webhook.AnsweredBy("alice") {
		t.Fatalf("after answering through the link: %+v", got)
	}
	t.Run("ErrLinkUsed", func(t *testing.T) {
		wantBody(t, b.get(path), `id="refused"`, "used already")
		r := b.post(path, url.Values{"attention_id": {req.ID.String()}, "answer": {"us"}})
		wantStatus(t, r, http.StatusConflict)
		if got, _ := e.att.Get(ctx, e.project.ID, req.ID); *got.Answer != "eu-west-1" {
			t.Fatalf("a spent link changed the answer to %q", *got.Answer)
		}
	})
	t.Run("ErrLinkInvalid", func(t *testing.T) {
		wantStatus(t, b.get(path+"x"), http.StatusNotFound)
		wantStatus(t, b.get("/answer/not-a-project/"+token), http.StatusNotFound)
	})
	t.Run("ErrCrossSite", func(t *testing.T) {
		token2, _, err := e.links.Issue(ctx, e.project.ID, other.ID, "alice", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		r := b.post("/answer/"+e.project.ID.String()+"/"+token2, url.Values{"attention_id": {other.ID.String()}, "answer": {"xl"}},
			"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")
		wantStatus(t, r, http.StatusForbidden)
		if got, _ := e.att.Get(ctx, e.project.ID, other.ID); got.State != attention.StateOpen {
			t.Fatalf("a cross-site post answered: %+v", got)
		}
	})
}
