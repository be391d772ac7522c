package webhook

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/input"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// The formats of a webhook's requests.
const (
	// FormatStandard: a Standard Webhooks JSON body {type, timestamp, data}.
	FormatStandard = "standard"
	// FormatSlack: a Slack-compatible incoming-webhook body (text and
	// blocks), for a chat channel.
	FormatSlack = "slack"
)

// Why delivery disabled a webhook (Webhook.DisabledReason): ReasonFailing
// after a day of failed attempts, ReasonGone when its receiver answered
// 410 Gone (the Standard Webhooks way of asking for no more deliveries).
const (
	ReasonFailing = "failing"
	ReasonGone    = "gone"
)

// Webhook is a stored webhook, without its secret.
type Webhook struct {
	ProjectID uuid.UUID
	ID        uuid.UUID
	URL       string
	// EventTypes are the types wanted; empty: every type.
	EventTypes  []string
	Format      string
	Recipient   *string
	Description string
	Enabled     bool
	// DisabledReason is ReasonFailing when delivery disabled it after a
	// day of failures, ReasonGone after its receiver answered 410 Gone
	// (nil: enabled, or disabled by a person).
	DisabledReason *string
	DisabledAt     *time.Time
	// FailingSince is the first failed attempt since the last success.
	FailingSince *time.Time
	// ConsecutiveFailures counts the failed attempts since the last
	// success; from breakerAfter on the webhook is paused between attempts.
	ConsecutiveFailures int
	// PausedUntil is when its deliveries may be attempted again after its
	// run of failures (nil, or a time past: not paused).
	PausedUntil *time.Time
	CreatedBy   string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// PreviousSecretUntil is when the secret a rotation replaced stops
	// signing beside the new one (nil: never rotated).
	PreviousSecretUntil *time.Time
}

// PausedAt reports whether w's deliveries wait at now for its receiver's
// run of failures to be given time (PausedUntil still ahead).
func (w Webhook) PausedAt(now time.Time) bool {
	return w.PausedUntil != nil && w.PausedUntil.After(now)
}

// DisabledGone reports whether delivery disabled w because its receiver
// answered 410 Gone.
func (w Webhook) DisabledGone() bool {
	return !w.Enabled && w.DisabledReason != nil && *w.DisabledReason == ReasonGone
}

// Created is a new webhook and its secret, shown only this once.
type Created struct {
	Webhook
	Secret string
}

// New is the input of Create. Format "" is FormatStandard; Enabled nil is
// true.
type New struct {
	URL         string
	EventTypes  []string
	Format      string
	Recipient   *string
	Description string
	Enabled     *bool
	CreatedBy   string
}

// Change is the input of Update: nil fields stay as they are.
// Recipient is changed when SetRecipient is set (nil then clears it).
type Change struct {
	URL          *string
	EventTypes   *[]string
	Format       *string
	SetRecipient bool
	Recipient    *string
	Description  *string
	Enabled      *bool
}

// Service manages webhooks. Each method runs on its executor (a pool, or a
// caller's transaction).
type Service struct {
	exec  db.Executor
	clock clock.Clock
	// allowPrivate accepts URLs naming loopback, link-local and private
	// addresses (an operator's choice; tests need it).
	allowPrivate bool
	// enabled is told when a webhook was created enabled or enabled
	// again (OnEnabled); nil: nobody.
	enabled func()
}

// NewService returns a Service on exec; a nil clk is the database's clock.
// allowPrivate accepts webhook URLs that name private addresses (see
// Guard).
func NewService(exec db.Executor, clk clock.Clock, allowPrivate bool) *Service {
	if clk == nil {
		clk = clock.Database{}
	}
	return &Service{exec: exec, clock: clk, allowPrivate: allowPrivate}
}

// OnEnabled has f called after a webhook is created enabled or enabled
// by Update, from the caller's goroutine: the server passes its
// Deliverer's Wake, so a replica whose deliverer waits out IdlePoll (no
// webhook was enabled) starts at once on the one it stored. Call it
// before the Service is used.
func (s *Service) OnEnabled(f func()) { s.enabled = f }

// told calls the OnEnabled function, if any.
func (s *Service) told() {
	if s.enabled != nil {
		s.enabled()
	}
}

var q = dbq.New()

// Bounds of a webhook's fields.
const (
	maxURLBytes         = 2048
	maxRecipientBytes   = 150
	maxDescriptionBytes = 500
)

// Create stores a webhook with a new secret. It follows the log from now:
// events before it was created are not sent.
//
// Errors: invalid_argument (url, event_types, format, recipient,
// description).
func (s *Service) Create(ctx context.Context, project uuid.UUID, in New) (Created, error) {
	if in.Format == "" {
		in.Format = FormatStandard
	}
	enabled := true
	if in.Enabled != nil {
		enabled = *in.Enabled
	}
	if err := s.check(in.URL, in.EventTypes, in.Format, in.Recipient, in.Description); err != nil {
		return Created{}, err
	}
	secret, err := NewSecret()
	if err != nil {
		return Created{}, err
	}
	types := normTypes(in.EventTypes)
	row, err := q.CreateWebhook(ctx, s.exec, dbq.CreateWebhookParams{
		ProjectID: project, Url: in.URL, EventTypes: types, Secret: secret, Format: in.Format,
		Recipient: in.Recipient, Description: in.Description, Enabled: enabled, CreatedBy: in.CreatedBy,
		Now: s.clock.Now(),
	})
	if err != nil {
		return Created{}, db.Translate(err)
	}
	if enabled {
		s.told()
	}
	return Created{Webhook: fromRow(row), Secret: secret}, nil
}

// MaxSecretGrace bounds how long a rotated secret may go on signing beside
// the new one.
const MaxSecretGrace = 7 * 24 * time.Hour

// RotateSecret gives the webhook a new signing secret, shown only this
// once, without touching its history or its pending deliveries. Every
// delivery is signed with the new secret at once; the previous one signs
// beside it (a second signature in webhook-signature) for grace, by the
// database's clock, so that receivers can switch keys without refusing a
// delivery (0: the previous secret stops at once). A second rotation
// within the grace replaces the secret that signs beside.
//
// Errors: invalid_argument (grace), not_found.
func (s *Service) RotateSecret(ctx context.Context, project, id uuid.UUID, grace time.Duration) (Created, error) {
	if grace < 0 || grace > MaxSecretGrace {
		return Created{}, wgerr.InvalidField("grace", "must be 0 to %s", MaxSecretGrace)
	}
	secret, err := NewSecret()
	if err != nil {
		return Created{}, err
	}
	row, err := q.RotateWebhookSecret(ctx, s.exec, dbq.RotateWebhookSecretParams{
		ProjectID: project, ID: id, NewSecret: secret, GraceSeconds: grace.Seconds(), Now: s.clock.Now(),
	})
	if err != nil {
		return Created{}, notFoundOr(err, id)
	}
	return Created{Webhook: fromRow(row), Secret: secret}, nil
}

// Get returns one webhook.
//
// Errors: not_found.
func (s *Service) Get(ctx context.Context, project, id uuid.UUID) (Webhook, error) {
	row, err := q.GetWebhook(ctx, s.exec, dbq.GetWebhookParams{ProjectID: project, ID: id})
	if err != nil {
		return Webhook{}, notFoundOr(err, id)
	}
	return fromRow(row), nil
}

// List returns the project's webhooks, oldest first.
func (s *Service) List(ctx context.Context, project uuid.UUID) ([]Webhook, error) {
	rows, err := q.ListWebhooks(ctx, s.exec, project)
	if err != nil {
		return nil, db.Translate(err)
	}
	out := make([]Webhook, len(rows))
	for i, r := range rows {
		out[i] = fromRow(r)
	}
	return out, nil
}

// Update changes a webhook. Enabling it (Enabled true) clears what
// disabled it and makes its pending deliveries due at once; the events
// that happened while it was disabled are delivered too.
//
// Errors: invalid_argument, not_found.
func (s *Service) Update(ctx context.Context, project, id uuid.UUID, ch Change) (Webhook, error) {
	var out Webhook
	err := db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
		cur, err := q.GetWebhook(ctx, tx, dbq.GetWebhookParams{ProjectID: project, ID: id})
		if err != nil {
			return notFoundOr(err, id)
		}
		next := fromRow(cur)
		if ch.URL != nil {
			next.URL = *ch.URL
		}
		if ch.EventTypes != nil {
			next.EventTypes = *ch.EventTypes
		}
		if ch.Format != nil {
			next.Format = *ch.Format
		}
		if ch.SetRecipient {
			next.Recipient = ch.Recipient
		}
		if ch.Description != nil {
			next.Description = *ch.Description
		}
		if err := s.check(next.URL, next.EventTypes, next.Format, next.Recipient, next.Description); err != nil {
			return err
		}
		var types []string
		if ch.EventTypes != nil {
			types = normTypes(*ch.EventTypes)
		}
		now := s.clock.Now()
		if ch.Enabled != nil && !*ch.Enabled {
			// Its pending deliveries wait for it out of the way of every
			// other webhook's (see the query).
			if err := q.ParkPendingDeliveries(ctx, tx, dbq.ParkPendingDeliveriesParams{
				ProjectID: project, WebhookID: id,
			}); err != nil {
				return db.Translate(err)
			}
		}
		row, err := q.UpdateWebhook(ctx, tx, dbq.UpdateWebhookParams{
			ProjectID: project, ID: id, Url: ch.URL, EventTypes: types, Format: ch.Format,
			SetRecipient: ch.SetRecipient, Recipient: ch.Recipient, Description: ch.Description,
			Enabled: ch.Enabled, Now: now,
		})
		if err != nil {
			return notFoundOr(err, id)
		}
		if ch.Enabled != nil && *ch.Enabled {
			if err := q.RetryPendingDeliveries(ctx, tx, dbq.RetryPendingDeliveriesParams{
				ProjectID: project, WebhookID: id, Now: now,
			}); err != nil {
				return err
			}
		}
		out = fromRow(row)
		return nil
	})
	if err == nil && ch.Enabled != nil && *ch.Enabled {
		s.told()
	}
	return out, err
}

// Delete removes a webhook and its delivery records; what was not yet
// delivered is not sent.
//
// Errors: not_found.
func (s *Service) Delete(ctx context.Context, project, id uuid.UUID) error {
	n, err := q.DeleteWebhook(ctx, s.exec, dbq.DeleteWebhookParams{ProjectID: project, ID: id})
	if err != nil {
		return db.Translate(err)
	}
	if n == 0 {
		return notFound(id)
	}
	return nil
}

// Disabled returns the project's webhooks that delivery disabled (the
// notice a person sees in the web UI).
func (s *Service) Disabled(ctx context.Context, project uuid.UUID) ([]Webhook, error) {
	rows, err := q.DisabledWebhooks(ctx, s.exec, project)
	if err != nil {
		return nil, db.Translate(err)
	}
	out := make([]Webhook, len(rows))
	for i, r := range rows {
		out[i] = Webhook{ProjectID: project, ID: r.ID, URL: r.Url, DisabledReason: r.DisabledReason, DisabledAt: r.DisabledAt}
	}
	return out, nil
}

func (s *Service) check(rawURL string, types []string, format string, recipient *string, description string) error {
	if err := s.checkURL(rawURL); err != nil {
		return err
	}
	for _, t := range types {
		if !events.KnownType(t) {
			return wgerr.InvalidField("event_types", "unknown event type %q (known: %s)", t, strings.Join(events.Types, ", "))
		}
	}
	if format != FormatStandard && format != FormatSlack {
		return wgerr.InvalidField("format", "must be %q or %q", FormatStandard, FormatSlack)
	}
	if recipient != nil && (strings.TrimSpace(*recipient) == "" || len(*recipient) > maxRecipientBytes) {
		return wgerr.InvalidField("recipient", "must be 1 to %d bytes", maxRecipientBytes)
	}
	if recipient != nil {
		if err := input.Line("recipient", *recipient); err != nil {
			return err
		}
	}
	if len(description) > maxDescriptionBytes {
		return wgerr.InvalidField("description", "must be at most %d bytes", maxDescriptionBytes)
	}
	// Both are shown as one line: the recipient in messages, the
	// description in the list of webhooks.
	return input.Line("description", description)
}

// checkURL accepts an absolute http or https URL without credentials whose
// host, when it is an address (in any way of writing one), is one delivery
// may reach, written a.b.c.d when it is IPv4 (see refusedHost). A name is
// checked again at every dial (Guard), whatever it resolves to then.
func (s *Service) checkURL(raw string) error {
	if raw == "" || len(raw) > maxURLBytes {
		return wgerr.InvalidField("url", "must be 1 to %d bytes", maxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return wgerr.InvalidField("url", "must be an absolute http or https URL")
	}
	if u.User != nil {
		return wgerr.InvalidField("url", "must not carry credentials (the signature authenticates the sender)")
	}
	if u.Fragment != "" {
		return wgerr.InvalidField("url", "must not have a fragment")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return wgerr.InvalidField("url", "port %s is not a TCP port (1 to 65535)", port)
		}
	}
	if err := refusedHost(u.Hostname(), s.allowPrivate); err != nil {
		return wgerr.InvalidField("url", "%v", err)
	}
	return nil
}

// normTypes is types without duplicates, in the order of events.Types
// (never nil: the column is an array).
func normTypes(types []string) []string {
	out := []string{}
	for _, t := range events.Types {
		if slices.Contains(types, t) {
			out = append(out, t)
		}
	}
	return out
}

func fromRow(r dbq.Webhook) Webhook {
	return Webhook{
		ProjectID: r.ProjectID, ID: r.ID, URL: r.Url, EventTypes: r.EventTypes, Format: r.Format,
		Recipient: r.Recipient, Description: r.Description, Enabled: r.Enabled,
		DisabledReason: r.DisabledReason, DisabledAt: r.DisabledAt, FailingSince: r.FailingSince,
		ConsecutiveFailures: int(r.ConsecutiveFailures), PausedUntil: r.PausedUntil,
		CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		PreviousSecretUntil: r.PreviousSecretUntil,
	}
}

func notFound(id uuid.UUID) error {
	return wgerr.New(wgerr.CodeNotFound, "webhook %s not found", id)
}

func notFoundOr(err error, id uuid.UUID) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound(id)
	}
	return db.Translate(err)
}
