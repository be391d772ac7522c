package webhook_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/webhook"
	"github.com/workgraph-dev/workgraph/wgerr"
)

func TestCreate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		tx := dbtest.TestTx(t)
		p := mustProject(t, tx)
		svc := webhook.NewService(tx, nil, false)
		c, err := svc.Create(ctx, p, webhook.New{URL: "https://hooks.example.com/wg",
			EventTypes: []string{events.AttentionOpened, events.ItemCreated, events.AttentionOpened}, CreatedBy: "token:admin"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(c.Secret, "whsec_") || len(c.Secret) < 40 {
			t.Fatalf("secret %q is not a whsec_ secret", c.Secret)
		}
		if !c.Enabled || c.Format != webhook.FormatStandard {
			t.Fatalf("created %+v: want enabled, standard", c.Webhook)
		}
		if got := strings.Join(c.EventTypes, ","); got != "item.created,attention.opened" {
			t.Fatalf("event types %s, want them once in the log's order", got)
		}
		got, err := svc.Get(ctx, p, c.ID)
		if err != nil || got.URL != c.URL {
			t.Fatalf("Get = %+v, %v", got, err)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		t.Parallel()
		tx := dbtest.TestTx(t)
		p := mustProject(t, tx)
		svc := webhook.NewService(tx, nil, false)
		for _, tt := range []struct {
			name, field string
			in          webhook.New
		}{
			{"NoURL", "url", webhook.New{}},
			{"NotHTTP", "url", webhook.New{URL: "ftp://example.com/x"}},
			{"Relative", "url", webhook.New{URL: "/hooks"}},
			{"Credentials", "url", webhook.New{URL: "https://u:p@example.com/"}},
			{"Loopback", "url", webhook.New{URL: "http://127.0.0.1:9000/"}},
			{"Localhost", "url", webhook.New{URL: "http://localhost:9000/"}},
			{"Private", "url", webhook.New{URL: "http://10.0.0.7/"}},
			{"Metadata", "url", webhook.New{URL: "http://169.254.169.254/latest/"}},
			{"LoopbackV6", "url", webhook.New{URL: "http://[::1]/"}},
			{"PrivateThroughNAT64", "url", webhook.New{URL: "http://[64:ff9b::a00:7]/"}},
			// IPv4 written as resolvers and browsers read it besides a.b.c.d
			// (inet_aton's and the WHATWG URL standard's forms): each is
			// 127.0.0.1 or 10.0.0.1 to some of them.
			{"LoopbackShort", "url", webhook.New{URL: "http://127.1:9000/"}},
			{"LoopbackDecimal", "url", webhook.New{URL: "http://2130706433/"}},
			{"LoopbackHex", "url", webhook.New{URL: "http://0x7f000001/"}},
			{"LoopbackOctal", "url", webhook.New{URL: "http://0177.0.0.1/"}},
			{"PrivateHexPart", "url", webhook.New{URL: "http://0x0a.0.0.1/"}},
			{"PrivateShort", "url", webhook.New{URL: "http://10.1/"}},
			{"LoopbackTrailingDot", "url", webhook.New{URL: "http://127.0.0.1./"}},
			{"PublicDecimal", "url", webhook.New{URL: "http://134744072/"}},
			// What the HTTP client maps to ASCII before it dials (IDNA):
			// ideographic full stops, circled digits.
			{"LoopbackIdeographicDots", "url", webhook.New{URL: "http://127。0。0。1/"}},
			{"LoopbackCircledDigits", "url", webhook.New{URL: "http://①②⑦.0.0.1/"}},
			// localhost however it is spelled (RFC 6761: every name under
			// localhost is loopback).
			{"LocalhostUpper", "url", webhook.New{URL: "http://LOCALHOST/"}},
			{"LocalhostTrailingDot", "url", webhook.New{URL: "http://localhost./"}},
			{"LocalhostSubdomain", "url", webhook.New{URL: "http://app.localhost:3000/"}},
			// IPv6 forms that carry an IPv4 address: IPv4-compatible
			// (::a.b.c.d) and IPv4-translated (::ffff:0:a.b.c.d).
			{"LoopbackV4Compatible", "url", webhook.New{URL: "http://[::127.0.0.1]/"}},
			{"PrivateV4Translated", "url", webhook.New{URL: "http://[::ffff:0:10.0.0.1]/"}},
			{"PortTooLarge", "url", webhook.New{URL: "https://example.com:99999/"}},
			{"PortZero", "url", webhook.New{URL: "https://example.com:0/"}},
			{"UnknownType", "event_types", webhook.New{URL: "https://example.com/", EventTypes: []string{"item.exploded"}}},
			// The recipient is who an answer link's answer is recorded as
			// ("user:<recipient> (answer link)"), in history and events,
			// which hold no control characters (token names and workers
			// refuse them too).
			{"RecipientLineBreak", "recipient", webhook.New{URL: "https://example.com/", Recipient: ptr("alice\nsystem")}},
			{"RecipientEscape", "recipient", webhook.New{URL: "https://example.com/", Recipient: ptr("alice\x1b[31m")}},
			{"Format", "format", webhook.New{URL: "https://example.com/", Format: "teams"}},
		} {
			_, err := svc.Create(ctx, p, tt.in)
			var we *wgerr.Error
			if !errors.As(err, &we) || we.Code != wgerr.CodeInvalid || we.Field != tt.field {
				t.Errorf("%s: Create = %v, want invalid_argument on %s", tt.name, err, tt.field)
			}
		}
		list, err := svc.List(ctx, p)
		if err != nil || len(list) != 0 {
			t.Fatalf("after refused creates List = %v, %v; want none", list, err)
		}
	})
	t.Run("OKNamesAndPublicAddresses", func(t *testing.T) {
		t.Parallel()
		tx := dbtest.TestTx(t)
		p := mustProject(t, tx)
		svc := webhook.NewService(tx, nil, false)
		for _, u := range []string{
			"http://8.8.8.8/", "https://[2606:4700:4700::1111]/", "https://hooks.example.com./x",
			"https://m\u00fcnchen.example/", "https://localhost.example.com/", "https://0x7f000001.example.com/",
			"https://10.1.example/", "https://a.b.c.d.e.example/",
		} {
			if _, err := svc.Create(ctx, p, webhook.New{URL: u}); err != nil {
				t.Errorf("Create %s: %v", u, err)
			}
		}
	})
	t.Run("PrivateAllowedByTheOperator", func(t *testing.T) {
		t.Parallel()
		tx := dbtest.TestTx(t)
		p := mustProject(t, tx)
		svc := webhook.NewService(tx, nil, true)
		for _, u := range []string{"http://127.0.0.1:9000/", "http://localhost:9000/", "http://[::1]:9000/"} {
			if _, err := svc.Create(ctx, p, webhook.New{URL: u}); err != nil {
				t.Fatalf("%s with private addresses allowed: %v", u, err)
			}
		}
		// An address written otherwise than a.b.c.d is looked up as a name
		// by the delivery's resolver, and would never be delivered.
		for _, u := range []string{"http://127.1:9000/", "http://2130706433:9000/", "http://127.0.0.1.:9000/"} {
			if _, err := svc.Create(ctx, p, webhook.New{URL: u}); !errors.Is(err, wgerr.Invalid) {
				t.Errorf("%s with private addresses allowed: %v, want invalid_argument", u, err)
			}
		}
	})
}

func TestUpdateAndDelete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.TestTx(t)
	p := mustProject(t, tx)
	svc := webhook.NewService(tx, nil, false)
	c, err := svc.Create(ctx, p, webhook.New{URL: "https://example.com/a"})
	if err != nil {
		t.Fatal(err)
	}
	off, slack, who := false, webhook.FormatSlack, "alice"
	w, err := svc.Update(ctx, p, c.ID, webhook.Change{Enabled: &off, Format: &slack, SetRecipient: true, Recipient: &who})
	if err != nil {
		t.Fatal(err)
	}
	if w.Enabled || w.Format != slack || w.Recipient == nil || *w.Recipient != who || w.DisabledAt == nil {
		t.Fatalf("updated %+v", w)
	}
	if w.DisabledReason != nil {
		t.Fatalf("a person's disabling has reason %q, want none", *w.DisabledReason)
	}
	bad := "teams"
	if _, err := svc.Update(ctx, p, c.ID, webhook.Change{Format: &bad}); !errors.Is(err, wgerr.Invalid) {
		t.Fatalf("Update format teams = %v, want invalid_argument", err)
	}
	if got, _ := svc.Get(ctx, p, c.ID); got.Format != slack {
		t.Fatalf("a refused update changed the format to %s", got.Format)
	}
	if _, err := svc.Update(ctx, p, uuid.New(), webhook.Change{Enabled: &off}); !errors.Is(err, wgerr.NotFound) {
		t.Fatalf("Update of no webhook = %v, want not_found", err)
	}
	if err := svc.Delete(ctx, p, c.ID); err != nil {
		t.Fatal(err)
	}
	if err := svc.Delete(ctx, p, c.ID); !errors.Is(err, wgerr.NotFound) {
		t.Fatalf("second Delete = %v, want not_found", err)
	}
	// A webhook of another project is not found from this one.
	other := mustProject(t, tx)
	c2, err := svc.Create(ctx, other, webhook.New{URL: "https://example.com/b"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Get(ctx, p, c2.ID); !errors.Is(err, wgerr.NotFound) {
		t.Fatalf("Get across projects = %v, want not_found", err)
	}
}

func ptr[T any](v T) *T { return &v }
