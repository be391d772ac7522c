package api

import (
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/webhook"
	"github.com/workgraph-dev/workgraph/wgerr"
	"github.com/workgraph-dev/workgraph/wire"
)

func (a *API) mountWebhooks(e *echo.Echo) {
	a.handle(e, http.MethodPost, "/projects/:project/webhooks", a.createWebhook, people)
	a.handle(e, http.MethodGet, "/projects/:project/webhooks", a.listWebhooks, people)
	a.handle(e, http.MethodGet, "/projects/:project/webhooks/:id", a.getWebhook, people)
	a.handle(e, http.MethodPatch, "/projects/:project/webhooks/:id", a.updateWebhook, people)
	a.handle(e, http.MethodDelete, "/projects/:project/webhooks/:id", a.deleteWebhook, people)
	a.handle(e, http.MethodPost, "/projects/:project/webhooks/:id/secret", a.rotateWebhookSecret, people)
	a.handle(e, http.MethodGet, "/projects/:project/webhooks/:id/deliveries", a.webhookDeliveries, people)
	a.handle(e, http.MethodGet, "/projects/:project/notifications", a.getNotifications, people)
	a.handle(e, http.MethodPatch, "/projects/:project/notifications", a.updateNotifications, people)
}

func webhookView(w webhook.Webhook) wire.Webhook {
	types := w.EventTypes
	if types == nil {
		types = []string{}
	}
	return wire.Webhook{ID: w.ID.String(), ProjectID: w.ProjectID.String(), URL: w.URL, EventTypes: types,
		Format: w.Format, Recipient: w.Recipient, Description: w.Description, Enabled: w.Enabled,
		DisabledReason: w.DisabledReason, DisabledAt: w.DisabledAt, FailingSince: w.FailingSince,
		ConsecutiveFailures: w.ConsecutiveFailures, PausedUntil: w.PausedUntil,
		CreatedBy: w.CreatedBy, CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt, PreviousSecretUntil: w.PreviousSecretUntil}
}

func deliveryView(d webhook.Delivery) wire.Delivery {
	v := wire.Delivery{Seq: d.Seq, EventType: d.EventType, MessageID: d.MessageID, State: d.State,
		Attempts: d.Attempts, NextAttemptAt: d.NextAttemptAt, StatusCode: d.LastStatus, Response: d.LastResponse,
		Error: d.LastError, CreatedAt: d.CreatedAt, FinishedAt: d.FinishedAt}
	if d.LastLatency != nil {
		ms := d.LastLatency.Milliseconds()
		v.LatencyMs = &ms
	}
	return v
}

// webhooks is the webhook service, or 503 when the server runs without
// one (an API built for a test of other routes).
// webhookRoute reads the project and webhook of a /webhooks/{id} route
// and the service that stores them.
func (a *API) webhookRoute(c echo.Context) (project, id uuid.UUID, svc *webhook.Service, err error) {
	p, err := a.project(c)
	if err != nil {
		return uuid.Nil, uuid.Nil, nil, err
	}
	if id, err = routeID(c, "webhook"); err != nil {
		return uuid.Nil, uuid.Nil, nil, err
	}
	svc, err = a.webhooks()
	return p.ID, id, svc, err
}

func (a *API) webhooks() (*webhook.Service, error) {
	if a.svc.Webhooks == nil {
		return nil, wgerr.New(wgerr.CodeUnavailable, "webhooks are not served here")
	}
	return a.svc.Webhooks, nil
}

type createWebhookRequest struct {
	URL        *string  `json:"url"`
	EventTypes []string `json:"event_types"`
	// Format: absent, "standard"; "" is refused as any other value
	// outside the enum (webhook.New reads "" as absent).
	Format *string `json:"format"`
	// Recipient: null or absent, none.
	Recipient   optionalString `json:"recipient"`
	Description string         `json:"description"`
	Enabled     *bool          `json:"enabled"`
}

func (a *API) createWebhook(c echo.Context) error {
	var req createWebhookRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.URL == nil {
		return wgerr.InvalidField("url", "is required")
	}
	format := webhook.FormatStandard
	if req.Format != nil {
		if *req.Format == "" {
			return wgerr.InvalidField("format", "must be %q or %q (omit it for %q)", webhook.FormatStandard, webhook.FormatSlack, webhook.FormatStandard)
		}
		format = *req.Format
	}
	p, err := a.project(c)
	if err != nil {
		return err
	}
	svc, err := a.webhooks()
	if err != nil {
		return err
	}
	w, err := svc.Create(c.Request().Context(), p.ID, webhook.New{URL: *req.URL, EventTypes: req.EventTypes,
		Format: format, Recipient: req.Recipient.value, Description: req.Description, Enabled: req.Enabled,
		CreatedBy: principal(c).String()})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, wire.CreatedWebhook{Secret: w.Secret, Webhook: webhookView(w.Webhook)})
}

func (a *API) listWebhooks(c echo.Context) error {
	if err := onlyQuery(c); err != nil {
		return err
	}
	p, err := a.project(c)
	if err != nil {
		return err
	}
	svc, err := a.webhooks()
	if err != nil {
		return err
	}
	ws, err := svc.List(c.Request().Context(), p.ID)
	if err != nil {
		return err
	}
	out := wire.WebhookList{Webhooks: make([]wire.Webhook, len(ws))}
	for i, w := range ws {
		out.Webhooks[i] = webhookView(w)
	}
	return c.JSON(http.StatusOK, out)
}

func (a *API) getWebhook(c echo.Context) error {
	if err := onlyQuery(c); err != nil {
		return err
	}
	project, id, svc, err := a.webhookRoute(c)
	if err != nil {
		return err
	}
	w, err := svc.Get(c.Request().Context(), project, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, webhookView(w))
}

// rotateWebhookSecret gives a webhook a new signing secret, shown this
// once: 200 CreatedWebhook.
func (a *API) rotateWebhookSecret(c echo.Context) error {
	var req wire.RotateWebhookSecretRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	grace := int64(wire.DefaultSecretGraceSeconds)
	if req.GraceSeconds != nil {
		grace = *req.GraceSeconds
	}
	if max := int64(webhook.MaxSecretGrace / time.Second); grace < 0 || grace > max {
		return wgerr.InvalidField("grace_seconds", "must be 0 to %d", max)
	}
	project, id, svc, err := a.webhookRoute(c)
	if err != nil {
		return err
	}
	w, err := svc.RotateSecret(c.Request().Context(), project, id, time.Duration(grace)*time.Second)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wire.CreatedWebhook{Secret: w.Secret, Webhook: webhookView(w.Webhook)})
}

type updateWebhookRequest struct {
	URL        *string   `json:"url"`
	EventTypes *[]string `json:"event_types"`
	Format     *string   `json:"format"`
	// Recipient: explicit null clears it; absent leaves it.
	Recipient   optionalString `json:"recipient"`
	Description *string        `json:"description"`
	Enabled     *bool          `json:"enabled"`
}

func (a *API) updateWebhook(c echo.Context) error {
	var req updateWebhookRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	project, id, svc, err := a.webhookRoute(c)
	if err != nil {
		return err
	}
	w, err := svc.Update(c.Request().Context(), project, id, webhook.Change{URL: req.URL, EventTypes: req.EventTypes,
		Format: req.Format, SetRecipient: req.Recipient.set, Recipient: req.Recipient.value,
		Description: req.Description, Enabled: req.Enabled})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, webhookView(w))
}

func (a *API) deleteWebhook(c echo.Context) error {
	project, id, svc, err := a.webhookRoute(c)
	if err != nil {
		return err
	}
	if err := svc.Delete(c.Request().Context(), project, id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (a *API) webhookDeliveries(c echo.Context) error {
	if err := onlyQuery(c, "before", "limit"); err != nil {
		return err
	}
	limit, err := pageSize(c)
	if err != nil {
		return err
	}
	before, err := queryInt(c, "before")
	if err != nil {
		return err
	}
	if before != nil && *before < 1 {
		return wgerr.InvalidField("before", "must be a positive event number")
	}
	project, id, svc, err := a.webhookRoute(c)
	if err != nil {
		return err
	}
	var b int64
	if before != nil {
		b = int64(*before)
	}
	ds, err := svc.Deliveries(c.Request().Context(), project, id, b, limit)
	if err != nil {
		return err
	}
	out := wire.DeliveryList{Deliveries: make([]wire.Delivery, len(ds))}
	for i, d := range ds {
		out.Deliveries[i] = deliveryView(d)
	}
	if len(ds) == limit {
		last := ds[len(ds)-1].Seq
		out.NextBefore = &last
	}
	return c.JSON(http.StatusOK, out)
}

func settingsView(s webhook.Settings) wire.NotificationSettings {
	return wire.NotificationSettings{AnswerLinks: s.AnswerLinks, AnswerLinkTTLSeconds: int(s.AnswerLinkTTL / time.Second)}
}

func (a *API) answerLinks() (*webhook.AnswerLinks, error) {
	if a.svc.AnswerLinks == nil {
		return nil, wgerr.New(wgerr.CodeUnavailable, "notification settings are not served here")
	}
	return a.svc.AnswerLinks, nil
}

func (a *API) getNotifications(c echo.Context) error {
	if err := onlyQuery(c); err != nil {
		return err
	}
	p, err := a.project(c)
	if err != nil {
		return err
	}
	links, err := a.answerLinks()
	if err != nil {
		return err
	}
	s, err := links.Settings(c.Request().Context(), p.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, settingsView(s))
}

type updateNotificationsRequest struct {
	AnswerLinks          *bool `json:"answer_links"`
	AnswerLinkTTLSeconds *int  `json:"answer_link_ttl_seconds"`
}

func (a *API) updateNotifications(c echo.Context) error {
	var req updateNotificationsRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	p, err := a.project(c)
	if err != nil {
		return err
	}
	links, err := a.answerLinks()
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	s, err := links.Settings(ctx, p.ID)
	if err != nil {
		return err
	}
	if req.AnswerLinks != nil {
		s.AnswerLinks = *req.AnswerLinks
	}
	if req.AnswerLinkTTLSeconds != nil {
		if *req.AnswerLinkTTLSeconds < 60 || *req.AnswerLinkTTLSeconds > 604800 {
			return wgerr.InvalidField("answer_link_ttl_seconds", "must be between 60 and 604800")
		}
		s.AnswerLinkTTL = time.Duration(*req.AnswerLinkTTLSeconds) * time.Second
	}
	s, err = links.SetSettings(ctx, p.ID, s)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, settingsView(s))
}
