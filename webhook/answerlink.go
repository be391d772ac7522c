package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// Settings are a project's notification settings.
type Settings struct {
	// AnswerLinks: attention notifications of webhooks that name a
	// recipient carry an answer link (off by default).
	AnswerLinks bool
	// AnswerLinkTTL is how long a link stays usable (default 24 h; 1 min
	// to 7 days).
	AnswerLinkTTL time.Duration
}

// DefaultAnswerLinkTTL is Settings.AnswerLinkTTL's default.
const DefaultAnswerLinkTTL = 24 * time.Hour

// Link is an answer link as stored (its secret is not).
type Link struct {
	ProjectID   uuid.UUID
	ID          uuid.UUID
	AttentionID uuid.UUID
	// WebhookID is the webhook that sent the link (nil: a link issued
	// before links were bound to their webhook); the link answers only
	// while that webhook exists and names Recipient.
	WebhookID *uuid.UUID
	Recipient string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
	// Usable: not used and not expired (the database's clock).
	Usable bool
}

// Why a link cannot be used: plain sentinels for errors.Is, each
// returned wrapped in a wgerr error of its kind (linkError).
var (
	// ErrLinkInvalid: no such link, or its secret does not match
	// (not_found).
	ErrLinkInvalid = errors.New("this answer link is not valid")
	// ErrLinkUsed: the link answered its request already (conflict).
	ErrLinkUsed = errors.New("this answer link was used already")
	// ErrLinkExpired: the link's time is up (conflict).
	ErrLinkExpired = errors.New("this answer link has expired")
	// ErrLinkOtherRequest: the link answers another request (forbidden).
	ErrLinkOtherRequest = errors.New("this answer link is for another request")
	// ErrLinksOff: the project has answer links turned off (conflict);
	// no link answers while they are.
	ErrLinksOff = errors.New("answer links are turned off in this project")
	// ErrLinkWebhookDeleted: the webhook that sent the link was deleted
	// (conflict); its links answer no more.
	ErrLinkWebhookDeleted = errors.New("the webhook that sent this answer link was deleted")
	// ErrLinkRecipientChanged: the webhook that sent the link names
	// another recipient now (conflict); the links it sent to the one
	// before answer no more.
	ErrLinkRecipientChanged = errors.New("the webhook that sent this answer link now notifies someone else")
)

var linkCodes = map[error]wgerr.Code{
	ErrLinkInvalid: wgerr.CodeNotFound, ErrLinkUsed: wgerr.CodeConflict,
	ErrLinkExpired: wgerr.CodeConflict, ErrLinkOtherRequest: wgerr.CodeForbidden,
	ErrLinksOff: wgerr.CodeConflict, ErrLinkWebhookDeleted: wgerr.CodeConflict,
	ErrLinkRecipientChanged: wgerr.CodeConflict,
}

// linkError is sentinel as a wgerr error of its kind.
func linkError(sentinel error) error {
	return &wgerr.Error{Code: linkCodes[sentinel], Message: sentinel.Error(), Err: sentinel}
}

// AnswerLinks issues and spends answer links: a signed, single-use,
// short-lived link that lets the named recipient of a notification answer
// one attention request without a sign-in session. A link is
// "<id>.<secret>"; only the secret's SHA-256 is stored.
type AnswerLinks struct {
	exec      db.Executor
	clock     clock.Clock
	attention *attention.Service
}

// NewAnswerLinks returns the link service on exec; att answers the
// requests (its executor is rebound to each answer's transaction).
func NewAnswerLinks(exec db.Executor, clk clock.Clock, att *attention.Service) *AnswerLinks {
	if clk == nil {
		clk = clock.Database{}
	}
	return &AnswerLinks{exec: exec, clock: clk, attention: att}
}

// Settings returns the project's notification settings.
func (s *AnswerLinks) Settings(ctx context.Context, project uuid.UUID) (Settings, error) {
	row, err := q.NotificationSettings(ctx, s.exec, project)
	if err != nil {
		return Settings{}, db.Translate(err)
	}
	return Settings{AnswerLinks: row.AnswerLinks, AnswerLinkTTL: time.Duration(row.AnswerLinkTtlS) * time.Second}, nil
}

// SetSettings stores the project's notification settings; a zero TTL is
// the default.
//
// Errors: invalid_argument (answer_link_ttl_seconds out of bounds).
func (s *AnswerLinks) SetSettings(ctx context.Context, project uuid.UUID, in Settings) (Settings, error) {
	if in.AnswerLinkTTL == 0 {
		in.AnswerLinkTTL = DefaultAnswerLinkTTL
	}
	if in.AnswerLinkTTL < time.Minute || in.AnswerLinkTTL > 7*24*time.Hour {
		return Settings{}, wgerr.InvalidField("answer_link_ttl_seconds", "must be between 60 and 604800")
	}
	row, err := q.SetNotificationSettings(ctx, s.exec, dbq.SetNotificationSettingsParams{
		ProjectID: project, AnswerLinks: in.AnswerLinks, AnswerLinkTtlS: int32(in.AnswerLinkTTL / time.Second),
	})
	if err != nil {
		return Settings{}, db.Translate(err)
	}
	return Settings{AnswerLinks: row.AnswerLinks, AnswerLinkTTL: time.Duration(row.AnswerLinkTtlS) * time.Second}, nil
}

// Issue makes a link to answer request as recipient, sent by webhook
// hook, usable for ttl, and returns its token (the secret part of the
// link's URL) and the link. The link answers only while hook exists and
// names recipient.
func (s *AnswerLinks) Issue(ctx context.Context, project, request, hook uuid.UUID, recipient string, ttl time.Duration) (string, Link, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return "", Link{}, err
	}
	sum := sha256.Sum256(secret)
	row, err := q.CreateAnswerLink(ctx, s.exec, dbq.CreateAnswerLinkParams{
		ProjectID: project, AttentionID: request, WebhookID: hook, Recipient: recipient, SecretHash: sum[:],
		Now: s.clock.Now(), TtlSeconds: ttl.Seconds(),
	})
	if err != nil {
		return "", Link{}, db.Translate(err)
	}
	token := row.ID.String() + "." + base64.RawURLEncoding.EncodeToString(secret)
	return token, linkFromRow(row, true), nil
}

// parseToken splits a link's token into its id and its secret's hash.
func parseToken(token string) (uuid.UUID, []byte, error) {
	idPart, secretPart, ok := strings.Cut(token, ".")
	if !ok {
		return uuid.Nil, nil, linkError(ErrLinkInvalid)
	}
	id, err := uuid.Parse(idPart)
	if err != nil {
		return uuid.Nil, nil, linkError(ErrLinkInvalid)
	}
	secret, err := base64.RawURLEncoding.DecodeString(secretPart)
	if err != nil || len(secret) != 32 {
		return uuid.Nil, nil, linkError(ErrLinkInvalid)
	}
	sum := sha256.Sum256(secret)
	return id, sum[:], nil
}

// Open returns the link a token names and its request, for the answer
// page.
//
// Errors: ErrLinkInvalid, ErrLinkUsed, ErrLinksOff,
// ErrLinkWebhookDeleted, ErrLinkRecipientChanged, ErrLinkExpired (the
// link and request come back with all but the first, for the page to say
// so).
func (s *AnswerLinks) Open(ctx context.Context, project uuid.UUID, token string) (Link, attention.Request, error) {
	id, hash, err := parseToken(token)
	if err != nil {
		return Link{}, attention.Request{}, err
	}
	row, err := q.GetAnswerLink(ctx, s.exec, dbq.GetAnswerLinkParams{ProjectID: project, ID: id, Now: s.clock.Now()})
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !hmac.Equal(row.SecretHash, hash)) {
		return Link{}, attention.Request{}, linkError(ErrLinkInvalid)
	}
	if err != nil {
		return Link{}, attention.Request{}, db.Translate(err)
	}
	link := Link{ProjectID: row.ProjectID, ID: row.ID, AttentionID: row.AttentionID, WebhookID: row.WebhookID,
		Recipient: row.Recipient, CreatedAt: row.CreatedAt, ExpiresAt: row.ExpiresAt, UsedAt: row.UsedAt,
		Usable: row.Usable && row.LinksOn && row.WebhookState == webhookOK}
	req, err := s.attention.Get(ctx, project, link.AttentionID)
	if err != nil {
		return Link{}, attention.Request{}, err
	}
	switch {
	case link.UsedAt != nil:
		return link, req, linkError(ErrLinkUsed)
	case !row.LinksOn:
		return link, req, linkError(ErrLinksOff)
	case row.WebhookState != webhookOK:
		return link, req, webhookError(row.WebhookState)
	case !link.Usable:
		return link, req, linkError(ErrLinkExpired)
	}
	return link, req, nil
}

// AnsweredBy is who a link's answer is recorded as: the recipient, and
// that it came through an answer link.
func AnsweredBy(recipient string) string {
	return "user:" + recipient + " (answer link)"
}

// Answer answers request through the link token names, in one
// transaction: the link is spent by the statement that checks it (unused,
// unexpired, its secret matching, its project's answer links on, the
// webhook that sent it still there and naming its recipient), then
// the request is resolved as AnsweredBy(recipient). request must be the
// link's own.
//
// Errors: ErrLinkInvalid, ErrLinkUsed, ErrLinksOff, ErrLinkExpired,
// ErrLinkWebhookDeleted, ErrLinkRecipientChanged, ErrLinkOtherRequest,
// and those of attention.Service.Resolve (conflict: the request was
// closed already, the link is then not spent).
func (s *AnswerLinks) Answer(ctx context.Context, project uuid.UUID, token string, request uuid.UUID, answer string) (attention.Request, error) {
	id, hash, err := parseToken(token)
	if err != nil {
		return attention.Request{}, err
	}
	var out attention.Request
	err = db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
		row, err := q.UseAnswerLink(ctx, tx, dbq.UseAnswerLinkParams{ProjectID: project, ID: id, SecretHash: hash, Now: s.clock.Now()})
		if errors.Is(err, pgx.ErrNoRows) {
			return s.whyRefused(ctx, tx, project, id, hash)
		}
		if err != nil {
			return err
		}
		if row.AttentionID != request {
			return linkError(ErrLinkOtherRequest)
		}
		out, err = s.attention.On(tx).Resolve(ctx, project, request, answer, AnsweredBy(row.Recipient))
		return err
	})
	return out, err
}

// whyRefused explains a link UseAnswerLink did not spend.
func (s *AnswerLinks) whyRefused(ctx context.Context, tx pgx.Tx, project, id uuid.UUID, hash []byte) error {
	row, err := q.GetAnswerLink(ctx, tx, dbq.GetAnswerLinkParams{ProjectID: project, ID: id, Now: s.clock.Now()})
	switch {
	case errors.Is(err, pgx.ErrNoRows) || (err == nil && !hmac.Equal(row.SecretHash, hash)):
		return linkError(ErrLinkInvalid)
	case err != nil:
		return err
	case row.UsedAt != nil:
		return linkError(ErrLinkUsed)
	case !row.LinksOn:
		return linkError(ErrLinksOff)
	case row.WebhookState != webhookOK:
		return webhookError(row.WebhookState)
	default:
		return linkError(ErrLinkExpired)
	}
}

// webhookOK is GetAnswerLink's webhook_state of a link whose webhook
// exists and names its recipient.
const webhookOK = "ok"

// webhookError says why a link's webhook_state refuses it.
func webhookError(state string) error {
	if state == "recipient_changed" {
		return linkError(ErrLinkRecipientChanged)
	}
	return linkError(ErrLinkWebhookDeleted)
}

func linkFromRow(r dbq.AnswerLink, usable bool) Link {
	return Link{ProjectID: r.ProjectID, ID: r.ID, AttentionID: r.AttentionID, WebhookID: r.WebhookID, Recipient: r.Recipient,
		CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, UsedAt: r.UsedAt, Usable: usable}
}
