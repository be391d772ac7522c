package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserAnswerSurvivesSignOut: a person types an answer into an
// attention request while signed out in another tab of the same browser;
// sending it changes nothing (no session, no answer), leads through the
// sign-in back to the inbox, and the typed answer is in its box again,
// to send. Once the answer is accepted, the draft is gone. It used to
// land on the sign-in page with the text lost.
func TestBrowserAnswerSurvivesSignOut(t *testing.T) {
	t.Parallel()
	ctx := startBrowser(t)
	srv := bootServer(t)
	human, agent, _, claim := liveProject(t, srv, "draft")
	var ask struct {
		Attention struct {
			ID string `json:"id"`
		} `json:"attention"`
	}
	apiCall(t, srv, agent, "POST", "/v1/leases/"+claim.Lease.ID+"/attention", map[string]any{
		"epoch": claim.Lease.Epoch, "question": "Which licence, and why?",
	}, &ask)
	box := `#answer-` + ask.Attention.ID
	const typed = "Apache-2.0: it has a patent grant."

	step(t, ctx,
		signIn(srv, human, "/signin?next=/p/draft/inbox"),
		chromedp.WaitVisible(chromedp.CSS(box)),
	)
	waitJS(t, ctx, `document.body.getAttribute("data-stream") === "open"`)
	step(t, ctx, chromedp.SendKeys(chromedp.CSS(box), typed))

	// Another tab of the same browser signs out.
	other, cancel := chromedp.NewContext(ctx)
	defer cancel()
	step(t, other,
		chromedp.Navigate(srv.URL()+"/p/draft/items"),
		chromedp.WaitVisible(chromedp.CSS(`form[action="/signout"] button`)),
		chromedp.Click(chromedp.CSS(`form[action="/signout"] button`)),
		chromedp.WaitVisible(chromedp.ID("token")),
	)
	cancel()

	// Sending the answer finds no session: the sign-in form, nothing sent.
	step(t, ctx,
		chromedp.Click(chromedp.CSS(`article#req-`+ask.Attention.ID+` button.primary`)),
		chromedp.WaitVisible(chromedp.ID("token")),
	)
	var req struct {
		State  string  `json:"state"`
		Answer *string `json:"answer"`
	}
	apiCall(t, srv, agent, "GET", "/v1/attention/"+ask.Attention.ID, nil, &req)
	if req.State != "open" {
		t.Fatalf("a post without a session changed the request: %+v", req)
	}
	// Signing in again leads back to the inbox, the answer restored.
	step(t, ctx,
		chromedp.SendKeys(chromedp.ID("token"), human),
		chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.CSS(box)),
	)
	if path := eval[string](t, ctx, `location.pathname`); path != "/p/draft/inbox" {
		t.Fatalf("after signing in again: %s, want the inbox", path)
	}
	if got := eval[string](t, ctx, `document.querySelector("`+box+`").value`); got != typed {
		t.Fatalf("the answer box holds %q after signing in again, want %q", got, typed)
	}
	if text := eval[string](t, ctx, `document.body.innerText`); !strings.Contains(text, "nothing was sent") {
		t.Errorf("the inbox does not say the form was not sent:\n%s", text)
	}
	step(t, ctx,
		chromedp.Click(chromedp.CSS(`article#req-`+ask.Attention.ID+` button.primary`)),
		chromedp.WaitVisible(chromedp.ID("answered")),
	)
	apiCall(t, srv, agent, "GET", "/v1/attention/"+ask.Attention.ID, nil, &req)
	if req.State != "resolved" || req.Answer == nil || *req.Answer != typed {
		t.Fatalf("after sending the restored answer: %+v (answer %s), want resolved with the typed text", req, deref(req.Answer))
	}
	if n := eval[int](t, ctx, `Object.keys(localStorage).filter(k => k.includes("`+ask.Attention.ID+`")).length`); n != 0 {
		t.Errorf("%d drafts of the answered request are kept", n)
	}
}
