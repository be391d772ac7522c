package web_test

import (
	"context"
	"errors"
	htmltemplate "html/template"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/web"
	"github.com/workgraph-dev/workgraph/webhook"
	"github.com/workgraph-dev/workgraph/wgerr"
)

func TestWebhooksPages(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	c := e.mustHook()
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

// TestWebhookGoneNotice: a webhook delivery disabled because its receiver
// answered 410 Gone is named on every page of the project with that
// reason, not as "failing for a day", and its page says why.
func TestWebhookGoneNotice(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	c := e.mustHook()
	human := e.signIn(e.human)
	if _, err := e.pool.Exec(ctx, `UPDATE webhooks SET enabled = false, disabled_reason = $2, disabled_at = now()
		WHERE id = $1`, c.ID, webhook.ReasonGone); err != nil {
		t.Fatal(err)
	}
	r := human.get("/p/acme/inbox")
	wantBody(t, r, `id="webhooks-disabled"`, "stopped because its receiver answered 410 Gone", "/p/acme/webhooks/"+c.ID.String())
	if strings.Contains(r.body, "failing for a day") {
		t.Fatal("the notice of a webhook whose receiver answered 410 says it failed for a day")
	}
	r = human.get("/p/acme/webhooks/" + c.ID.String())
	wantBody(t, r, "its receiver answered 410 Gone", "Enable again")
	r = human.get("/p/acme/webhooks")
	wantBody(t, r, "its receiver answered 410 Gone")
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
	e.answerLinksOn(t, true)
	token, _, err := e.links.Issue(ctx, e.project.ID, req.ID, e.linkHook(t, "alice"), "alice", time.Hour)
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
	// Post/Redirect/Get: the answer's post answers 303 to the link's
	// page, which confirms it once; a reload of that page sends nothing
	// and says the link is spent.
	r = b.post(path, url.Values{"attention_id": {req.ID.String()}, "answer": {"eu-west-1"}})
	wantStatus(t, r, http.StatusSeeOther)
	if loc := r.Header.Get("Location"); loc != path {
		t.Fatalf("answered: redirected to %q, want %q", loc, path)
	}
	r = b.get(path)
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, `id="answered"`, webhook.AnsweredBy("alice"))
	if strings.Contains(r.body, `id="refused"`) {
		t.Error("the confirmation says the link is refused")
	}
	wantBody(t, b.get(path), `id="refused"`, "used already")
	// Another browser, or a forged mark, gets no confirmation.
	stranger := e.browser()
	u, _ := url.Parse(e.srv.URL + path)
	stranger.c.Jar.SetCookies(u, []*http.Cookie{{Name: "wg_answered", Value: "forged", Path: path}})
	if r := stranger.get(path); strings.Contains(r.body, `id="answered"`) {
		t.Error("a forged mark shows the confirmation")
	}
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
	t.Run("ErrAnsweredByAnAction", func(t *testing.T) {
		// A link issued for a spent budget's request (before links skipped
		// them) shows where the action is instead of an answer box.
		bud := e.mustItem("Budgeted")
		r, err := e.att.Open(ctx, e.project.ID, bud.ID, attention.NewRequest{Question: "The budget is spent.", Blocking: true,
			Source: attention.SourceSystem, Reason: attention.ReasonBudgetExhausted, RequestedBy: "system"})
		if err != nil {
			t.Fatal(err)
		}
		tok, _, err := e.links.Issue(ctx, e.project.ID, r.ID, e.linkHook(t, "alice"), "alice", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		page := b.get("/answer/" + e.project.ID.String() + "/" + tok)
		wantStatus(t, page, http.StatusOK)
		wantBody(t, page, `id="refused"`, "raising the budget", `href="/p/acme/items/`+bud.ID.String()+`"`)
		if strings.Contains(page.body, `name="answer"`) {
			t.Fatal("the page offers an answer box for a budget_exhausted request")
		}
	})
	t.Run("ErrCrossSite", func(t *testing.T) {
		token2, _, err := e.links.Issue(ctx, e.project.ID, other.ID, e.linkHook(t, "alice"), "alice", time.Hour)
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
	t.Run("ErrLinkRevoked", func(t *testing.T) {
		// Deleting the webhook that sent a link, or changing its
		// recipient, revokes the link; the page says why.
		for _, c := range []struct {
			name, want string
			revoke     func(hook uuid.UUID) error
		}{
			{"deleted", "was deleted", func(hook uuid.UUID) error { return e.hooks.Delete(ctx, e.project.ID, hook) }},
			{"recipient changed", "now notifies someone else", func(hook uuid.UUID) error {
				bob := "bob"
				_, err := e.hooks.Update(ctx, e.project.ID, hook, webhook.Change{SetRecipient: true, Recipient: &bob})
				return err
			}},
		} {
			hook := e.linkHook(t, "alice")
			tok, _, err := e.links.Issue(ctx, e.project.ID, other.ID, hook, "alice", time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.revoke(hook); err != nil {
				t.Fatal(err)
			}
			p := "/answer/" + e.project.ID.String() + "/" + tok
			page := b.get(p)
			wantStatus(t, page, http.StatusOK)
			wantBody(t, page, `id="refused"`, c.want)
			if strings.Contains(page.body, `name="answer"`) {
				t.Fatalf("%s: the page offers an answer box for a revoked link", c.name)
			}
			wantStatus(t, b.post(p, url.Values{"attention_id": {other.ID.String()}, "answer": {"xl"}}), http.StatusConflict)
			if got, _ := e.att.Get(ctx, e.project.ID, other.ID); got.State != attention.StateOpen {
				t.Fatalf("%s: a revoked link answered: %+v", c.name, got)
			}
		}
	})
	t.Run("ErrLinksTurnedOff", func(t *testing.T) {
		// Turning answer links off stops the links already sent.
		token3, _, err := e.links.Issue(ctx, e.project.ID, other.ID, e.linkHook(t, "alice"), "alice", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		e.answerLinksOn(t, false)
		path3 := "/answer/" + e.project.ID.String() + "/" + token3
		page := b.get(path3)
		wantStatus(t, page, http.StatusOK)
		wantBody(t, page, `id="refused"`, "turned off")
		if strings.Contains(page.body, `name="answer"`) {
			t.Fatal("the page offers an answer box with answer links turned off")
		}
		wantStatus(t, b.post(path3, url.Values{"attention_id": {other.ID.String()}, "answer": {"xl"}}), http.StatusConflict)
		if got, _ := e.att.Get(ctx, e.project.ID, other.ID); got.State != attention.StateOpen {
			t.Fatalf("a link answered with answer links turned off: %+v", got)
		}
	})
}

// linkHook makes a webhook naming recipient, the sender of the answer
// links made out to them, and returns its id.
func (e *env) linkHook(t *testing.T, recipient string) uuid.UUID {
	t.Helper()
	w, err := e.hooks.Create(context.Background(), e.project.ID,
		webhook.New{URL: "https://hooks.example.com/" + recipient, Recipient: &recipient, CreatedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return w.ID
}

// answerLinksOn turns the project's answer links on or off (on: as a
// project has them when the deliverer issues a link).
func (e *env) answerLinksOn(t *testing.T, on bool) {
	t.Helper()
	if _, err := e.links.SetSettings(context.Background(), e.project.ID, webhook.Settings{AnswerLinks: on}); err != nil {
		t.Fatal(err)
	}
}

// TestAnswerLinkGuessesThrottled: an answer link is a credential: a
// link that names no link (a guess) counts against the client's address
// as a failed sign-in does, and once the address's bucket is empty every
// answer link (a valid one too) and the sign-in are refused with 429
// before the link is looked up. Guesses were unlimited, each a lookup.
func TestAnswerLinkGuessesThrottled(t *testing.T) {
	t.Parallel()
	const burst = 3
	e := setup(t, func(d *web.Deps) { d.Throttle = auth.NewThrottle(0.001, burst, nil) })
	ctx := context.Background()
	req, err := e.att.Hold(ctx, e.project.ID, e.mustItem("Ship it").ID, "Which region?", "token:lead")
	if err != nil {
		t.Fatal(err)
	}
	e.answerLinksOn(t, true)
	token, _, err := e.links.Issue(ctx, e.project.ID, req.ID, e.linkHook(t, "alice"), "alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	id, _, _ := strings.Cut(token, ".")
	for i := range burst {
		guess := id + "." + strings.Repeat(string(rune('A'+i)), 43)
		wantStatus(t, b.get("/answer/"+e.project.ID.String()+"/"+guess), http.StatusNotFound)
	}
	r := b.get("/answer/" + e.project.ID.String() + "/" + token)
	wantStatus(t, r, http.StatusTooManyRequests)
	if r.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	b.get("/signin")
	wantStatus(t, b.post("/signin", url.Values{"token": {e.human}}), http.StatusTooManyRequests)
	if got, _ := e.att.Get(ctx, e.project.ID, req.ID); got.State != attention.StateOpen {
		t.Fatalf("a throttled address answered: %+v", got)
	}
}

// TestWebhookForms: a person adds a webhook from its page and sees its
// secret this once (not cached); a refused form says why and adds nothing;
// a webhook is deleted from its own page.
func TestWebhookForms(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	b := e.signIn(e.human)
	// The navigation links the page also on the page itself, before any
	// webhook exists.
	wantBody(t, b.get("/p/acme/webhooks"), `action="/p/acme/webhooks"`, `name="url"`, `name="event_types"`, `<option value="attention.opened">`,
		`<a href="/p/acme/webhooks" aria-current="page">Webhooks</a>`)

	for _, bad := range []struct {
		form url.Values
		why  string
	}{
		{url.Values{"url": {"http://127.0.0.1:9/hook"}, "format": {"standard"}}, "url:"},
		{url.Values{"url": {"https://hooks.example.com/a"}, "format": {"standard"}, "event_types": {"attention.opend"}}, `unknown event type &#34;attention.opend&#34;`},
		{url.Values{"url": {"https://hooks.example.com/a"}, "format": {"email"}}, "format:"},
	} {
		r := b.post("/p/acme/webhooks", bad.form)
		wantStatus(t, r, http.StatusBadRequest)
		wantBody(t, r, `class="error-box"`, bad.why, `value="`+bad.form.Get("url")+`"`)
	}
	if ws, err := e.hooks.List(ctx, e.project.ID); err != nil || len(ws) != 0 {
		t.Fatalf("after refused forms: %d webhooks (%v), want none", len(ws), err)
	}

	// Post/Redirect/Get: the post answers 303 to the webhooks page, which
	// shows the secret once (it is in neither the address nor a cookie);
	// a reload of that page shows it no more and adds nothing.
	r := b.post("/p/acme/webhooks", url.Values{"url": {"https://hooks.example.com/chat"}, "format": {"slack"},
		"event_types": {"attention.opened, attention.overdue"}, "description": {"the team channel"}})
	wantStatus(t, r, http.StatusSeeOther)
	wantRedirectWithoutSecret(t, r, "/p/acme/webhooks")
	ws, err := e.hooks.List(ctx, e.project.ID)
	if err != nil || len(ws) != 1 {
		t.Fatalf("webhooks: %+v %v", ws, err)
	}
	w := ws[0]
	if w.URL != "https://hooks.example.com/chat" || w.Format != "slack" || strings.Join(w.EventTypes, ",") != "attention.opened,attention.overdue" ||
		w.Description != "the team channel" || !w.Enabled || w.CreatedBy != "token:t-human" {
		t.Fatalf("stored %+v", w)
	}
	// Another session of the same person does not see it.
	if other := e.signIn(e.human).get("/p/acme/webhooks"); strings.Contains(other.body, "whsec_") {
		t.Error("another session sees the secret")
	}
	r = b.get("/p/acme/webhooks")
	wantStatus(t, r, http.StatusOK)
	if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("the page with the secret has Cache-Control %q, want no-store", cc)
	}
	wantBody(t, r, `id="created-hook"`, `<code class="secret" id="hook-secret">`+htmlText(t, secretOf(t, e, w.ID)), "/p/acme/webhooks/"+w.ID.String())
	if again := b.get("/p/acme/webhooks"); strings.Contains(again.body, "whsec_") {
		t.Error("the secret shows again on the next visit")
	}
	if ws, _ := e.hooks.List(ctx, e.project.ID); len(ws) != 1 {
		t.Fatalf("after the reloads: %d webhooks, want 1", len(ws))
	}

	for _, bad := range []string{"/p/acme/webhooks/not-an-id", "/p/acme/webhooks/" + uuid.NewString()} {
		wantStatus(t, b.get(bad), http.StatusNotFound)
		wantStatus(t, b.post(bad+"/delete", nil), http.StatusNotFound)
	}
	if ws, _ := e.hooks.List(ctx, e.project.ID); len(ws) != 1 {
		t.Fatalf("after deletes of other ids: %d webhooks, want 1", len(ws))
	}
	wantBody(t, b.get("/p/acme/webhooks/"+w.ID.String()), `action="/p/acme/webhooks/`+w.ID.String()+`/delete"`,
		`action="/p/acme/webhooks/`+w.ID.String()+`/secret"`)
	// A new secret: the post answers 303 to the webhook's page, which
	// shows it this once and is never cached; the old one signs beside it
	// for a day.
	r = b.post("/p/acme/webhooks/"+w.ID.String()+"/secret", nil)
	wantStatus(t, r, http.StatusSeeOther)
	wantRedirectWithoutSecret(t, r, "/p/acme/webhooks/"+w.ID.String())
	got, err := e.hooks.Get(ctx, e.project.ID, w.ID)
	if err != nil || got.PreviousSecretUntil == nil {
		t.Fatalf("after the rotation: %+v, %v; want the old secret kept signing", got, err)
	}
	rotated := secretOf(t, e, w.ID)
	r = b.get("/p/acme/webhooks/" + w.ID.String())
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, `id="rotated-hook"`, `<code class="secret" id="hook-secret">`+htmlText(t, rotated), "goes on signing beside it until")
	if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("the page with the new secret has Cache-Control %q, want no-store", cc)
	}
	if again := b.get("/p/acme/webhooks/" + w.ID.String()); strings.Contains(again.body, "whsec_") {
		t.Error("the new secret shows again on the next visit")
	}
	if secretOf(t, e, w.ID) != rotated {
		t.Error("a reload rotated the secret again")
	}
	wantStatus(t, b.post("/p/acme/webhooks/"+uuid.NewString()+"/secret", nil), http.StatusNotFound)
	wantStatus(t, b.post("/p/acme/webhooks/"+w.ID.String()+"/delete", nil), http.StatusSeeOther)
	if _, err := e.hooks.Get(ctx, e.project.ID, w.ID); !errors.Is(err, wgerr.NotFound) {
		t.Fatalf("after delete: %v, want not found", err)
	}
}

// wantRedirectWithoutSecret: r is a 303 to path, and neither its address
// nor its cookies carry a webhook secret.
func wantRedirectWithoutSecret(t *testing.T, r response, path string) {
	t.Helper()
	if loc := r.Header.Get("Location"); loc != path {
		t.Errorf("redirected to %q, want %q", loc, path)
	}
	for _, c := range r.Header.Values("Set-Cookie") {
		if strings.Contains(c, "whsec_") || strings.Contains(c, "wg_flash") {
			t.Errorf("the redirect sets the cookie %q", c)
		}
	}
}

// secretOf is the webhook's signing secret as stored.
// htmlText is s as the pages' templates write it in text: html/template
// escapes more than < > & ' " (a base64 secret's '+' is "&#43;"), so a
// secret compared with a page's bytes is escaped the same way.
func htmlText(t *testing.T, s string) string {
	t.Helper()
	var b strings.Builder
	if err := htmltemplate.Must(htmltemplate.New("t").Parse("{{.}}")).Execute(&b, s); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func secretOf(t *testing.T, e *env, id uuid.UUID) string {
	t.Helper()
	var s string
	if err := e.pool.QueryRow(context.Background(), `SELECT secret FROM webhooks WHERE id = $1`, id).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestParkedDeliveryShowsWhenEnabled: a pending delivery of a disabled
// webhook (parked: no next attempt until it is enabled) says so in the
// "Next attempt" column instead of leaving it blank.
func TestParkedDeliveryShowsWhenEnabled(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	off := false
	c, err := e.hooks.Create(ctx, e.project.ID, webhook.New{URL: "https://hooks.example.com/acme", Enabled: &off, CreatedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `INSERT INTO webhook_deliveries (project_id, webhook_id, seq, event_type, next_attempt_at, created_at)
		VALUES ($1, $2, 1, 'item.created', 'infinity', now())`, e.project.ID, c.ID); err != nil {
		t.Fatal(err)
	}
	r := e.signIn(e.human).get("/p/acme/webhooks/" + c.ID.String())
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, `<td class="nowrap muted">when enabled</td>`)
}

// TestDeliveryLatencyShown: a delivery's latency is shown at the
// precision it is recorded (milliseconds): a fast receiver's 47 ms is not
// "0s", and a slow one's reads in seconds.
func TestDeliveryLatencyShown(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	c := e.mustHook()
	if _, err := e.pool.Exec(ctx, `INSERT INTO webhook_deliveries (project_id, webhook_id, seq, event_type, state, attempts,
		next_attempt_at, last_status, last_latency_ms, created_at, finished_at)
		VALUES ($1, $2, 1, 'item.created', 'delivered', 1, now(), 200, 47, now(), now()),
		       ($1, $2, 2, 'item.created', 'delivered', 1, now(), 200, 0, now(), now()),
		       ($1, $2, 3, 'item.created', 'delivered', 1, now(), 200, 2350, now(), now())`, e.project.ID, c.ID); err != nil {
		t.Fatal(err)
	}
	r := e.signIn(e.human).get("/p/acme/webhooks/" + c.ID.String())
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, `<td class="num">47 ms</td>`, `<td class="num">0 ms</td>`, `<td class="num">2.35 s</td>`)
}

// TestAnswerLinkSuggestedAnswers: the answer page offers a request's
// suggested answers as buttons, as the inbox does, and one pressed is the
// answer.
func TestAnswerLinkSuggestedAnswers(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	req, err := e.att.Open(ctx, e.project.ID, e.mustItem("Ship it").ID, attention.NewRequest{Question: "Which region?",
		Blocking: true, Source: attention.SourcePerson, RequestedBy: "token:lead", SuggestedAnswers: []string{"eu-west-1", "us-east-1"}})
	if err != nil {
		t.Fatal(err)
	}
	e.answerLinksOn(t, true)
	token, _, err := e.links.Issue(ctx, e.project.ID, req.ID, e.linkHook(t, "alice"), "alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	path := "/answer/" + e.project.ID.String() + "/" + token
	b := e.browser()
	r := b.get(path)
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, `name="suggested" value="eu-west-1"`, `name="suggested" value="us-east-1"`)
	wantStatus(t, b.post(path, url.Values{"attention_id": {req.ID.String()}, "suggested": {"us-east-1"}, "answer": {""}}), http.StatusSeeOther)
	got, _ := e.att.Get(ctx, e.project.ID, req.ID)
	if got.State != attention.StateResolved || got.Answer == nil || *got.Answer != "us-east-1" {
		t.Fatalf("after pressing a suggested answer: %+v", got)
	}
}

// TestWebhookPagesShowRelativeTimes: the webhook pages show their
// instants as every page does (docs/web.md, "Times"): a <time> element
// relative to now with the absolute time on hover, not a bare UTC date;
// and each delivery says when it was made.
func TestWebhookPagesShowRelativeTimes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	c := e.mustHook()
	if _, err := e.pool.Exec(ctx, `UPDATE webhooks SET failing_since = now() - interval '2 hours' WHERE id = $1`, c.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `INSERT INTO webhook_deliveries (project_id, webhook_id, seq, event_type, attempts,
		next_attempt_at, last_status, last_latency_ms, created_at)
		VALUES ($1, $2, 1, 'item.created', 3, now() + interval '630 seconds', 500, 12, now() - interval '2 hours')`, e.project.ID, c.ID); err != nil {
		t.Fatal(err)
	}
	human := e.signIn(e.human)
	r := human.get("/p/acme/webhooks")
	wantBody(t, r, `failing since <time datetime=`, `>2 h ago</time>`, `>just now</time>`)
	r = human.get("/p/acme/webhooks/" + c.ID.String())
	wantBody(t, r, `failing since <time datetime=`, `>in 10 min</time>`, `<th>When</th>`, `>2 h ago</time>`)
	if strings.Contains(r.body, " UTC</td>") || strings.Contains(r.body, " UTC</span>") {
		t.Fatalf("a bare UTC time on the webhook's page:\n%s", r.body)
	}
}

// TestWebhookPagesShowThePause: a webhook whose receiver keeps failing is
// paused by delivery as a whole; its pages say until when and after how
// many failures, and say nothing of a pause once it has passed.
func TestWebhookPagesShowThePause(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	c := e.mustHook()
	if _, err := e.pool.Exec(ctx, `UPDATE webhooks SET failing_since = now() - interval '3 minutes',
		consecutive_failures = 6, paused_until = now() + interval '20 minutes 30 seconds' WHERE id = $1`, c.ID); err != nil {
		t.Fatal(err)
	}
	human := e.signIn(e.human)
	for _, page := range []string{"/p/acme/webhooks", "/p/acme/webhooks/" + c.ID.String()} {
		r := human.get(page)
		wantStatus(t, r, http.StatusOK)
		wantBody(t, r, `failing since <time datetime=`, `paused until <time datetime=`, `>in 20 min</time></span> after 6 failures in a row`)
	}
	// The pause passed; the run of failures goes on until a success.
	if _, err := e.pool.Exec(ctx, `UPDATE webhooks SET paused_until = now() - interval '1 minute' WHERE id = $1`, c.ID); err != nil {
		t.Fatal(err)
	}
	r := human.get("/p/acme/webhooks/" + c.ID.String())
	wantBody(t, r, `failing since <time datetime=`)
	if strings.Contains(r.body, "paused until") {
		t.Fatalf("the page shows a pause that has passed:\n%s", r.body)
	}
}

// TestAnswerLinkPageRelativeTimes: the answer page shows when the
// question was asked and when its link expires as every page shows an
// instant, a <time> relative to now, not a bare UTC date.
func TestAnswerLinkPageRelativeTimes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	req, err := e.att.Open(ctx, e.project.ID, e.mustItem("Ship it").ID, attention.NewRequest{Question: "Which region?",
		Blocking: true, Source: attention.SourcePerson, RequestedBy: "token:lead"})
	if err != nil {
		t.Fatal(err)
	}
	e.answerLinksOn(t, true)
	token, _, err := e.links.Issue(ctx, e.project.ID, req.ID, e.linkHook(t, "alice"), "alice", 3*time.Hour+time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r := e.browser().get("/answer/" + e.project.ID.String() + "/" + token)
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, `expires <time datetime=`, `>in 3 h</time>`, `>just now</time>`)
	if strings.Contains(r.body, " UTC</span>") || strings.Contains(r.body, "valid until 2") {
		t.Fatalf("a bare UTC time on the answer page:\n%s", r.body)
	}
}

// mustHook subscribes a webhook of the test's project to every event.
func (e *env) mustHook() webhook.Created {
	e.t.Helper()
	c, err := e.hooks.Create(context.Background(), e.project.ID, webhook.New{URL: "https://hooks.example.com/acme", CreatedBy: "test"})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}
