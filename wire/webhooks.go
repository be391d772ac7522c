package wire

import "time"

// Webhook is a project's subscription to its events, without its secret
// (schema Webhook). EventTypes empty: every type.
type Webhook struct {
	ID          string   `json:"id"`
	ProjectID   string   `json:"project_id"`
	URL         string   `json:"url"`
	EventTypes  []string `json:"event_types"`
	Format      string   `json:"format"`
	Recipient   *string  `json:"recipient"`
	Description string   `json:"description"`
	Enabled     bool     `json:"enabled"`
	// DisabledReason is WebhookDisabledFailing when delivery disabled the
	// webhook after a day of failures, WebhookDisabledGone when its
	// receiver answered 410 Gone (null: enabled, or disabled by a person).
	DisabledReason *string    `json:"disabled_reason"`
	DisabledAt     *time.Time `json:"disabled_at"`
	// FailingSince is the first failed attempt since the last success.
	FailingSince *time.Time `json:"failing_since"`
	// ConsecutiveFailures counts the failed attempts since the last
	// success; from 3 on the webhook is paused as a whole between attempts
	// (PausedUntil) and tried one attempt at a time.
	ConsecutiveFailures int `json:"consecutive_failures"`
	// PausedUntil is when the webhook's deliveries may be attempted again
	// after its receiver's run of failures (or its Retry-After); a time
	// already past, or null, means it is not paused.
	PausedUntil *time.Time `json:"paused_until"`
	CreatedBy   string     `json:"created_by"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	// PreviousSecretUntil is when the secret a rotation replaced stops
	// signing beside the current one (null: never rotated).
	PreviousSecretUntil *time.Time `json:"previous_secret_until"`
}

// RotateWebhookSecretRequest rotates a webhook's signing secret (schema
// RotateWebhookSecretRequest). GraceSeconds nil: DefaultSecretGraceSeconds.
type RotateWebhookSecretRequest struct {
	GraceSeconds *int64 `json:"grace_seconds,omitempty"`
}

// DefaultSecretGraceSeconds is how long a rotated secret signs beside the
// new one when the request does not say (a day).
const DefaultSecretGraceSeconds = 86400

// The formats of a webhook (Webhook.Format).
const (
	WebhookFormatStandard = "standard"
	WebhookFormatSlack    = "slack"
)

// Webhook.DisabledReason when delivery disabled the webhook: after a day
// of failed deliveries (WebhookDisabledFailing), or at once when its
// receiver answered 410 Gone (WebhookDisabledGone).
const (
	WebhookDisabledFailing = "failing"
	WebhookDisabledGone    = "gone"
)

// CreatedWebhook is the answer that created a webhook: its signing secret
// (whsec_..., shown this once only) and the webhook (schema
// CreatedWebhook).
type CreatedWebhook struct {
	Secret string `json:"secret"`
	Webhook
}

// WebhookList is a project's webhooks (schema WebhookList).
type WebhookList struct {
	Webhooks []Webhook `json:"webhooks"`
}

// Delivery is the one delivery record of a webhook's event, as its last
// attempt left it (schema Delivery). State is "pending" (NextAttemptAt
// says when it is tried), "delivered" or "failed".
type Delivery struct {
	Seq           int64      `json:"seq"`
	EventType     string     `json:"event_type"`
	MessageID     string     `json:"message_id"`
	State         string     `json:"state"`
	Attempts      int        `json:"attempts"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	StatusCode    *int       `json:"status_code"`
	LatencyMs     *int64     `json:"latency_ms"`
	// Response is the first bytes (at most 1 KiB) of the last answer.
	Response   *string    `json:"response"`
	Error      *string    `json:"error"`
	CreatedAt  time.Time  `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

// DeliveryList is a webhook's most recent deliveries, newest event first
// (schema DeliveryList). NextBefore, when set, pages on (?before=).
type DeliveryList struct {
	Deliveries []Delivery `json:"deliveries"`
	NextBefore *int64     `json:"next_before"`
}

// NotificationSettings are a project's notification settings (schema
// NotificationSettings).
type NotificationSettings struct {
	// AnswerLinks: attention notifications of webhooks that name a
	// recipient carry a single-use answer link.
	AnswerLinks          bool `json:"answer_links"`
	AnswerLinkTTLSeconds int  `json:"answer_link_ttl_seconds"`
}

// CreateWebhookRequest is the body of POST /v1/projects/{p}/webhooks.
type CreateWebhookRequest struct {
	URL         string   `json:"url"`
	EventTypes  []string `json:"event_types,omitempty"`
	Format      string   `json:"format,omitempty"`
	Recipient   *string  `json:"recipient,omitempty"`
	Description string   `json:"description,omitempty"`
	Enabled     *bool    `json:"enabled,omitempty"`
}

// UpdateWebhookRequest is the body of PATCH
// /v1/projects/{p}/webhooks/{id}; nil members are left as they are (a
// client sending a raw body may send "recipient": null to clear it).
type UpdateWebhookRequest struct {
	URL         *string   `json:"url,omitempty"`
	EventTypes  *[]string `json:"event_types,omitempty"`
	Format      *string   `json:"format,omitempty"`
	Recipient   *string   `json:"recipient,omitempty"`
	Description *string   `json:"description,omitempty"`
	Enabled     *bool     `json:"enabled,omitempty"`
}

// UpdateNotificationSettingsRequest is the body of PATCH
// /v1/projects/{p}/notifications; nil members are left as they are.
type UpdateNotificationSettingsRequest struct {
	AnswerLinks          *bool `json:"answer_links,omitempty"`
	AnswerLinkTTLSeconds *int  `json:"answer_link_ttl_seconds,omitempty"`
}
