package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/webhook"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// WebhooksPage lists a project's webhooks and their state (admins and
// humans).
type WebhooksPage struct {
	Layout
	Webhooks []webhook.Webhook
	// Form is the add form's input; Error why it was refused.
	Form  WebhookForm
	Error string
	// Created is the webhook just added, with its secret (shown this once).
	Created *webhook.Created
	// Types are the event types a webhook may ask for.
	Types []string
}

// WebhookForm is the input of the add form.
type WebhookForm struct {
	URL, Format, EventTypes, Description string
}

// Render writes the page.
func (p *WebhooksPage) Render(w http.ResponseWriter) error { return render(w, "webhooks", p) }

// WebhookPage is one webhook and its recent deliveries.
type WebhookPage struct {
	Layout
	Webhook    webhook.Webhook
	Deliveries []webhook.Delivery
	Failed     int
	// Secret is the new signing secret of a rotation just made, shown
	// this once ("": none).
	Secret string
}

// Render writes the page.
func (p *WebhookPage) Render(w http.ResponseWriter) error { return render(w, "webhook", p) }

// AnswerPage is the page of an answer link: the question and a form to
// answer it, for the link's recipient, without a sign-in session.
type AnswerPage struct {
	Layout
	ProjectID uuid.UUID
	Token     string
	Link      webhook.Link
	Request   attention.Request
	// Refused says why the link cannot answer (empty: it can); ItemURL is
	// the item page, where a request answered by an action is closed.
	Refused string
	ItemURL string
	// Answered: the answer was just recorded.
	Answered bool
	Error    string
}

// Render writes the page.
func (p *AnswerPage) Render(w http.ResponseWriter) error { return render(w, "answer", p) }

// refuseHooks is the page that refuses webhooks to a principal that may
// not manage them.
func (r *req) refuseHooks() error {
	return r.fail(http.StatusForbidden, "Not allowed", "Webhooks are managed by admins and humans.")
}

// mayManageHooks: webhooks are for admins and humans.
func (r *req) mayManageHooks() bool {
	return r.ui.Webhooks != nil && r.sess != nil && r.sess.Principal.Has(auth.RoleHuman)
}

// disabledHooks are the project's webhooks that delivery disabled, for
// the notice on every page of the project (to those who may enable them
// again). A failed read shows no notice rather than failing the page.
func (r *req) disabledHooks() []webhook.Webhook {
	if !r.mayManageHooks() {
		return nil
	}
	ws, err := r.ui.Webhooks.Disabled(r.ctx(), r.project.ID)
	if err != nil {
		return nil
	}
	return ws
}

func (u *ui) webhooksPage(r *req) error {
	if !r.mayManageHooks() {
		return r.refuseHooks()
	}
	ws, err := u.Webhooks.List(r.ctx(), r.project.ID)
	if err != nil {
		return err
	}
	page := &WebhooksPage{Layout: r.base("Webhooks", "webhooks"), Webhooks: ws,
		Form: WebhookForm{Format: webhook.FormatStandard}, Types: events.Types}
	// The webhook this session just added, with its secret: shown on this
	// page once (the flash is deleted as it is read, so a reload does not
	// show it again).
	if v, ok, err := u.Sessions.TakeFlash(r.ctx(), r.sessID, r.project.ID, createdHookFlash); err != nil {
		return err
	} else if ok {
		id, secret, _ := strings.Cut(v, " ")
		for _, w := range ws {
			if w.ID.String() == id {
				page.Created = &webhook.Created{Webhook: w, Secret: secret}
			}
		}
	}
	return r.show(page)
}

// The keys of the one-time messages (session.Store.PutFlash) that carry a
// webhook's secret from the post that made it to the page that shows it:
// the secret never travels in a URL or a cookie.
const (
	// createdHookFlash is "<webhook id> <secret>", for the webhooks page.
	createdHookFlash = "webhook-created"
	// rotatedHookFlash + the webhook's id is its new secret, for its page.
	rotatedHookFlash = "webhook-secret:"
)

// createWebhook adds a webhook from the form and answers 303 to the
// webhooks page, which shows its secret once (Post/Redirect/Get: a reload
// of that page adds nothing and shows the secret no more); a refused form
// is shown again with why, and adds nothing.
func (u *ui) createWebhook(r *req) error {
	if !r.mayManageHooks() {
		return r.refuseHooks()
	}
	form := WebhookForm{
		URL:         strings.TrimSpace(r.FormValue("url")),
		Format:      r.FormValue("format"),
		EventTypes:  r.FormValue("event_types"),
		Description: strings.TrimSpace(r.FormValue("description")),
	}
	c, err := u.Webhooks.Create(r.ctx(), r.project.ID, webhook.New{
		URL: form.URL, Format: form.Format, EventTypes: splitLabels(form.EventTypes),
		Description: form.Description, CreatedBy: r.by(),
	})
	if err == nil {
		if err := u.Sessions.PutFlash(r.ctx(), r.sessID, r.project.ID, createdHookFlash, c.ID.String()+" "+c.Secret); err != nil {
			return err
		}
		return r.Redirect(http.StatusSeeOther, r.projectURL("/webhooks"))
	}
	msg, ok := userMessage(err)
	if !ok {
		return err
	}
	_, status := wgerr.HTTPStatus(err)
	page := &WebhooksPage{Layout: r.base("Webhooks", "webhooks"), Form: form, Types: events.Types, Error: msg}
	if page.Webhooks, err = u.Webhooks.List(r.ctx(), r.project.ID); err != nil {
		return err
	}
	return r.showStatus(status, page)
}

// hookParam is the webhook the path names, for a principal who may
// manage webhooks. Otherwise ok is false and the error page that says why
// not has been written (err is its writing's).
func (r *req) hookParam() (id uuid.UUID, ok bool, err error) {
	if !r.mayManageHooks() {
		return uuid.Nil, false, r.refuseHooks()
	}
	id, perr := uuid.Parse(r.Param("id"))
	if perr != nil {
		return uuid.Nil, false, r.fail(http.StatusNotFound, "Not found", "There is no such webhook.")
	}
	return id, true, nil
}

// deleteWebhook removes a webhook and its deliveries' queue.
func (u *ui) deleteWebhook(r *req) error {
	id, ok, err := r.hookParam()
	if !ok {
		return err
	}
	if err := u.Webhooks.Delete(r.ctx(), r.project.ID, id); err != nil {
		return err
	}
	return r.redirect(r.projectURL("/webhooks"), "Webhook deleted: nothing more is delivered to it.")
}

func (u *ui) webhookPage(r *req) error {
	id, ok, err := r.hookParam()
	if !ok {
		return err
	}
	w, err := u.Webhooks.Get(r.ctx(), r.project.ID, id)
	if err != nil {
		return err
	}
	// A new secret this session just made, shown once.
	secret, _, err := u.Sessions.TakeFlash(r.ctx(), r.sessID, r.project.ID, rotatedHookFlash+id.String())
	if err != nil {
		return err
	}
	return r.showWebhook(w, secret)
}

// rotateWebhookSecret gives the webhook a new signing secret and answers
// 303 to the webhook's page, which shows it once (Post/Redirect/Get); the
// old one signs beside it for a day.
func (u *ui) rotateWebhookSecret(r *req) error {
	id, ok, err := r.hookParam()
	if !ok {
		return err
	}
	c, err := u.Webhooks.RotateSecret(r.ctx(), r.project.ID, id, 24*time.Hour)
	if err != nil {
		return err
	}
	if err := u.Sessions.PutFlash(r.ctx(), r.sessID, r.project.ID, rotatedHookFlash+id.String(), c.Secret); err != nil {
		return err
	}
	return r.Redirect(http.StatusSeeOther, r.projectURL("/webhooks/"+id.String()))
}

// showWebhook shows w's page, with a secret just made (or "").
func (r *req) showWebhook(w webhook.Webhook, secret string) error {
	u, id := r.ui, w.ID
	ds, err := u.Webhooks.Deliveries(r.ctx(), r.project.ID, id, 0, 100)
	if err != nil {
		return err
	}
	p := &WebhookPage{Layout: r.base("Webhook", "webhooks"), Webhook: w, Deliveries: ds, Secret: secret}
	for _, d := range ds {
		if d.State == webhook.StateFailed {
			p.Failed++
		}
	}
	return r.show(p)
}

// enableWebhook turns a webhook back on (the notice's way out): its
// pending deliveries are tried at once, the events that waited with them.
func (u *ui) enableWebhook(r *req) error {
	id, ok, err := r.hookParam()
	if !ok {
		return err
	}
	on := r.FormValue("enabled") != "false"
	if _, err := u.Webhooks.Update(r.ctx(), r.project.ID, id, webhook.Change{Enabled: &on}); err != nil {
		return err
	}
	msg := "Webhook disabled."
	if on {
		msg = "Webhook enabled: what waited is being delivered."
	}
	return r.redirect(r.projectURL("/webhooks/"+id.String()), msg)
}

// answerLink shows an answer link's question and form (GET), or answers
// through it (POST). No session is needed: the link is the capability,
// bound to its request and recipient, single-use and short-lived.
func (u *ui) answerLink(r *req) error {
	if u.Links == nil {
		return r.fail(http.StatusNotFound, "Not found", "There is no such page.")
	}
	// A link is a credential: a link that names none counts against the
	// address as a failed sign-in does, and a throttled address is refused
	// before the link is looked up.
	addr := auth.ClientAddr(r.Request())
	if wait, blocked := u.Throttle.Blocked(addr); blocked {
		r.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		return r.fail(http.StatusTooManyRequests, "Slow down", "Too many invalid answer links or sign-ins from your address. Try again in a moment.")
	}
	project, err := uuid.Parse(r.Param("project"))
	if err != nil {
		u.Throttle.Fail(addr)
		return r.fail(http.StatusNotFound, "Not found", "This answer link is not valid.")
	}
	token := r.Param("token")
	// The page must not leak the link to other sites.
	r.Response().Header().Set("Referrer-Policy", "no-referrer")
	p := &AnswerPage{Layout: Layout{Title: "Answer", Now: r.now()}, ProjectID: project, Token: token}
	link, req, err := u.Links.Open(r.ctx(), project, token)
	switch {
	case errors.Is(err, webhook.ErrLinkInvalid):
		u.Throttle.Fail(addr)
		return r.fail(http.StatusNotFound, "Not found", "This answer link is not valid.")
	case errors.Is(err, webhook.ErrLinkUsed):
		p.Refused = "This link was used already: the question was answered through it."
	case errors.Is(err, webhook.ErrLinkExpired):
		p.Refused = "This link has expired. Open the question in workgraph to answer it."
	case errors.Is(err, webhook.ErrLinksOff):
		p.Refused = "Answer links are turned off in this project. Open the question in workgraph to answer it."
	case errors.Is(err, webhook.ErrLinkWebhookDeleted):
		p.Refused = "The webhook that sent this link was deleted, and its links no longer answer. Open the question in workgraph to answer it."
	case errors.Is(err, webhook.ErrLinkRecipientChanged):
		p.Refused = "The webhook that sent this link now notifies someone else, so the links it sent before no longer answer. Open the question in workgraph to answer it."
	case err != nil:
		return err
	}
	p.Link, p.Request = link, req
	if errors.Is(err, webhook.ErrLinkUsed) && r.Request().Method == http.MethodGet && r.takeAnswered(token) &&
		req.ResolvedBy != nil && *req.ResolvedBy == webhook.AnsweredBy(link.Recipient) {
		// The page an answer through this link redirected to: it confirms
		// the answer, once (a reload shows that the link is spent).
		p.Refused, p.Answered = "", true
		return r.show(p)
	}
	if p.Refused == "" && req.State != attention.StateOpen {
		p.Refused = "This question was already " + string(req.State) + "."
	}
	if p.Refused == "" && !attention.AnsweredInWords(req.Reason) {
		// Answered by an action on the item page, where a person signs in.
		p.Refused = "This request is not answered in words: "
		if req.Reason == attention.ReasonBudgetExhausted {
			p.Refused += "it is closed by raising the budget (or cancelling the item)."
		} else {
			p.Refused += "it is closed by a decision: retry, done or cancel."
		}
		if proj, err := u.Graph.Project(r.ctx(), project.String()); err == nil {
			p.ItemURL = "/p/" + proj.Name + "/items/" + req.ItemID.String()
		}
	}
	if r.Request().Method != http.MethodPost || p.Refused != "" {
		status := http.StatusOK
		if p.Refused != "" && r.Request().Method == http.MethodPost {
			status = http.StatusConflict
		}
		return r.showStatus(status, p)
	}
	reqID, err := uuid.Parse(r.FormValue("attention_id"))
	if err != nil {
		reqID = uuid.Nil
	}
	// A suggested answer's button, as in the inbox, else the typed one.
	answer := r.FormValue("suggested")
	if answer == "" {
		answer = r.FormValue("answer")
	}
	_, err = u.Links.Answer(r.ctx(), project, token, reqID, answer)
	switch {
	case err == nil:
		// Post/Redirect/Get: the link's page confirms the answer, and a
		// reload of it sends nothing again.
		r.setAnswered(token)
		return r.Redirect(http.StatusSeeOther, r.Request().URL.EscapedPath())
	case errors.Is(err, webhook.ErrLinkOtherRequest):
		return r.fail(http.StatusForbidden, "Not allowed", "This answer link is for another question.")
	case errors.Is(err, webhook.ErrLinkUsed), errors.Is(err, webhook.ErrLinkExpired), errors.Is(err, webhook.ErrLinksOff),
		errors.Is(err, webhook.ErrLinkWebhookDeleted), errors.Is(err, webhook.ErrLinkRecipientChanged):
		p.Refused = err.Error()
		return r.showStatus(http.StatusConflict, p)
	}
	var we *wgerr.Error
	if code := wgerr.CodeOf(err); errors.As(err, &we) && (code == wgerr.CodeInvalid || code == wgerr.CodeConflict) {
		p.Error = we.Message
		_, status := wgerr.HTTPStatus(err)
		return r.showStatus(status, p)
	}
	return err
}

// answeredCookie marks, for the page an answer link's post redirects to,
// that this browser just answered through the link. Its value is an HMAC
// keyed by the link's token, so only a holder of the link can make one;
// it is scoped to the link's path and read once.
const answeredCookie = "wg_answered"

func answeredMark(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("workgraph answered v1"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// setAnswered sets the mark of an answer just sent through the link
// token, for a minute.
func (r *req) setAnswered(token string) {
	http.SetCookie(r.Response(), &http.Cookie{
		Name: answeredCookie, Value: answeredMark(token), Path: r.Request().URL.EscapedPath(),
		HttpOnly: true, Secure: secureRequest(r.Request()), SameSite: http.SameSiteLaxMode, MaxAge: 60,
	})
}

// takeAnswered reports whether the request carries the mark of an answer
// just sent through the link token, and clears it.
func (r *req) takeAnswered(token string) bool {
	c, err := r.Cookie(answeredCookie)
	if err != nil {
		return false
	}
	http.SetCookie(r.Response(), &http.Cookie{Name: answeredCookie, Path: r.Request().URL.EscapedPath(), MaxAge: -1, HttpOnly: true})
	return hmac.Equal([]byte(c.Value), []byte(answeredMark(token)))
}
