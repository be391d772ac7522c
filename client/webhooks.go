package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/workgraph-dev/workgraph/wire"
)

type (
	// Webhook is a project's subscription to its events (never its
	// secret).
	Webhook = wire.Webhook
	// CreatedWebhook is a new webhook with its signing secret, shown only
	// once.
	CreatedWebhook = wire.CreatedWebhook
	// Delivery is the one delivery record of a webhook's event.
	Delivery = wire.Delivery
	// DeliveryList is a page of a webhook's deliveries, newest first.
	DeliveryList = wire.DeliveryList
	// NotificationSettings are a project's notification settings.
	NotificationSettings = wire.NotificationSettings
	// CreateWebhookRequest is the input of CreateWebhook.
	CreateWebhookRequest = wire.CreateWebhookRequest
	// UpdateWebhookRequest is the input of UpdateWebhook.
	UpdateWebhookRequest = wire.UpdateWebhookRequest
	// RotateWebhookSecretRequest is the input of RotateWebhookSecret.
	RotateWebhookSecretRequest = wire.RotateWebhookSecretRequest
	// UpdateNotificationSettingsRequest is the input of
	// UpdateNotificationSettings.
	UpdateNotificationSettingsRequest = wire.UpdateNotificationSettingsRequest
)

func webhooksPath(project string) string { return "/v1/projects/" + esc(project) + "/webhooks" }

// CreateWebhook subscribes a URL to the project's events (admin, human).
// The signing secret is in CreatedWebhook.Secret and is shown only this
// once.
func (c *Client) CreateWebhook(ctx context.Context, project string, req CreateWebhookRequest) (*CreatedWebhook, error) {
	var out CreatedWebhook
	if _, err := c.do(ctx, http.MethodPost, webhooksPath(project), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RotateWebhookSecret gives a webhook a new signing secret, shown only in
// this answer; the previous one signs beside it for req.GraceSeconds (nil:
// a day).
func (c *Client) RotateWebhookSecret(ctx context.Context, project, id string, req RotateWebhookSecretRequest) (*CreatedWebhook, error) {
	var out CreatedWebhook
	if _, err := c.do(ctx, http.MethodPost, webhooksPath(project)+"/"+esc(id)+"/secret", nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListWebhooks lists the project's webhooks.
func (c *Client) ListWebhooks(ctx context.Context, project string) ([]Webhook, error) {
	var out wire.WebhookList
	if _, err := c.do(ctx, http.MethodGet, webhooksPath(project), nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Webhooks, nil
}

// GetWebhook returns one webhook.
func (c *Client) GetWebhook(ctx context.Context, project, id string) (*Webhook, error) {
	var out Webhook
	if _, err := c.do(ctx, http.MethodGet, webhooksPath(project)+"/"+esc(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// UpdateWebhook changes a webhook; Enabled true also clears a disabling
// and retries its pending deliveries at once.
func (c *Client) UpdateWebhook(ctx context.Context, project, id string, req UpdateWebhookRequest) (*Webhook, error) {
	var out Webhook
	if _, err := c.do(ctx, http.MethodPatch, webhooksPath(project)+"/"+esc(id), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteWebhook deletes a webhook and its delivery records.
func (c *Client) DeleteWebhook(ctx context.Context, project, id string) error {
	_, err := c.do(ctx, http.MethodDelete, webhooksPath(project)+"/"+esc(id), nil, nil, nil)
	return err
}

// ListDeliveries returns a page of a webhook's deliveries, newest event
// first: before 0 starts at the newest, else pass the previous page's
// NextBefore; limit 0 is the server's default.
func (c *Client) ListDeliveries(ctx context.Context, project, id string, before int64, limit int) (*DeliveryList, error) {
	q := url.Values{}
	if before > 0 {
		q.Set("before", strconv.FormatInt(before, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out DeliveryList
	if _, err := c.do(ctx, http.MethodGet, webhooksPath(project)+"/"+esc(id)+"/deliveries", q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// NotificationSettings returns the project's notification settings.
func (c *Client) NotificationSettings(ctx context.Context, project string) (*NotificationSettings, error) {
	var out NotificationSettings
	if _, err := c.do(ctx, http.MethodGet, "/v1/projects/"+esc(project)+"/notifications", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// UpdateNotificationSettings changes the project's notification settings.
func (c *Client) UpdateNotificationSettings(ctx context.Context, project string, req UpdateNotificationSettingsRequest) (*NotificationSettings, error) {
	var out NotificationSettings
	if _, err := c.do(ctx, http.MethodPatch, "/v1/projects/"+esc(project)+"/notifications", nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
