package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/server"
	"github.com/workgraph-dev/workgraph/wire"
)

func TestWebhooks(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *server.Config) { c.Webhooks.Off = true })
	e.mustProject("alpha")
	e.mustProject("beta")
	human := e.mustToken("alpha", "ann", "human")
	agent := e.mustToken("alpha", "bot", "agent")
	base := "/v1/projects/alpha/webhooks"

	var created wire.CreatedWebhook
	e.do("POST", base, human.Token, map[string]any{"url": "https://hooks.example.com/wg",
		"event_types": []string{"attention.opened"}, "format": "slack", "recipient": "ann"}).ok(t, 201, &created)
	if !strings.HasPrefix(created.Secret, "whsec_") || created.CreatedBy != "token:ann" || !created.Enabled {
		t.Fatalf("created %+v", created)
	}
	t.Run("ListHidesTheSecret", func(t *testing.T) {
		r := e.do("GET", base, human.Token, nil)
		if strings.Contains(string(r.body), created.Secret) || strings.Contains(string(r.body), "whsec_") {
			t.Fatalf("the list shows the secret: %s", r.body)
		}
		var list wire.WebhookList
		r.ok(t, 200, &list)
		if len(list.Webhooks) != 1 || list.Webhooks[0].ID != created.ID {
			t.Fatalf("list %+v", list)
		}
	})
	t.Run("RotateSecret", func(t *testing.T) {
		var r wire.CreatedWebhook
		e.do("POST", base+"/"+created.ID+"/secret", human.Token, `{"grace_seconds": 3600}`).ok(t, 200, &r)
		if !strings.HasPrefix(r.Secret, "whsec_") || r.Secret == created.Secret || r.ID != created.ID || r.PreviousSecretUntil == nil {
			t.Fatalf("rotation: %+v, want a new secret for the same webhook and when the old one stops", r)
		}
		var w wire.Webhook
		e.do("GET", base+"/"+created.ID, human.Token, nil).ok(t, 200, &w)
		if w.PreviousSecretUntil == nil || !w.PreviousSecretUntil.Equal(*r.PreviousSecretUntil) {
			t.Fatalf("webhook after rotation: %+v", w)
		}
		// Without a body: the default grace, a day.
		e.do("POST", base+"/"+created.ID+"/secret", human.Token, nil).ok(t, 200, &r)
		if d := time.Until(*r.PreviousSecretUntil); d < 23*time.Hour || d > 25*time.Hour {
			t.Fatalf("default grace: the old secret signs for %s, want a day", d)
		}
		field(t, e.do("POST", base+"/"+created.ID+"/secret", human.Token, `{"grace_seconds": -1}`).problem(t, 400, "invalid_argument"), "grace_seconds")
		field(t, e.do("POST", base+"/"+created.ID+"/secret", human.Token, `{"grace_seconds": 604801}`).problem(t, 400, "invalid_argument"), "grace_seconds")
		e.do("POST", base+"/"+created.ID+"/secret", agent.Token, nil).problem(t, 403, "forbidden")
		e.do("POST", base+"/00000000-0000-0000-0000-000000000001/secret", human.Token, nil).problem(t, 404, "not_found")
	})
	t.Run("UpdateAndDeliveries", func(t *testing.T) {
		var w wire.Webhook
		e.do("PATCH", base+"/"+created.ID, human.Token, `{"enabled": false, "recipient": null}`).ok(t, 200, &w)
		if w.Enabled || w.Recipient != nil || w.Format != "slack" {
			t.Fatalf("after PATCH: %+v", w)
		}
		var ds wire.DeliveryList
		e.do("GET", base+"/"+created.ID+"/deliveries?limit=5", human.Token, nil).ok(t, 200, &ds)
		if len(ds.Deliveries) != 0 || ds.NextBefore != nil {
			t.Fatalf("deliveries of a new webhook: %+v", ds)
		}
	})
	t.Run("ShowsItsPause", func(t *testing.T) {
		// A new webhook has failed nothing and waits for nothing.
		var w wire.Webhook
		e.do("GET", base+"/"+created.ID, human.Token, nil).ok(t, 200, &w)
		if w.ConsecutiveFailures != 0 || w.PausedUntil != nil {
			t.Fatalf("a webhook that never failed: consecutive_failures %d, paused_until %v", w.ConsecutiveFailures, w.PausedUntil)
		}
		// Its receiver failed 5 times in a row: delivery paused it.
		if _, err := e.pool.Exec(t.Context(), `UPDATE webhooks SET consecutive_failures = 5,
			failing_since = now() - interval '1 minute', paused_until = now() + interval '8 seconds' WHERE id = $1`, created.ID); err != nil {
			t.Fatal(err)
		}
		e.do("GET", base+"/"+created.ID, human.Token, nil).ok(t, 200, &w)
		if w.ConsecutiveFailures != 5 || w.PausedUntil == nil || time.Until(*w.PausedUntil) <= 0 || w.FailingSince == nil {
			t.Fatalf("a paused webhook: %+v, want consecutive_failures 5 and paused_until ahead", w)
		}
		var list wire.WebhookList
		e.do("GET", base, human.Token, nil).ok(t, 200, &list)
		if len(list.Webhooks) != 1 || list.Webhooks[0].ConsecutiveFailures != 5 || list.Webhooks[0].PausedUntil == nil {
			t.Fatalf("the list of a paused webhook: %+v", list)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		for _, c := range []struct{ body, field string }{
			{`{}`, "url"},
			{`{"url": "http://127.0.0.1:8080/"}`, "url"},
			{`{"url": "http://169.254.169.254/"}`, "url"},
			{`{"url": "https://example.com/", "event_types": ["nope"]}`, "event_types"},
			{`{"url": "https://example.com/", "format": "teams"}`, "format"},
			// An empty format is no format of the enum (PATCH refused it;
			// the create read it as "standard").
			{`{"url": "https://example.com/", "format": ""}`, "format"},
			{`{"url": "https://example.com/", "secret": "mine"}`, "secret"},
		} {
			field(t, e.do("POST", base, human.Token, c.body).problem(t, 400, "invalid_argument"), c.field)
		}
		if n := e.count("SELECT count(*) FROM webhooks"); n != 1 {
			t.Fatalf("%d webhooks stored, want the one valid", n)
		}
		e.do("GET", base+"/"+created.ID+"/deliveries?limit=0", human.Token, nil).problem(t, 400, "invalid_argument")
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		e.do("POST", base, agent.Token, map[string]any{"url": "https://example.com/"}).problem(t, 403, "forbidden")
		e.do("GET", base, agent.Token, nil).problem(t, 403, "forbidden")
	})
	t.Run("ErrOtherProject", func(t *testing.T) {
		e.do("GET", "/v1/projects/beta/webhooks", human.Token, nil).problem(t, 404, "not_found")
		e.do("GET", "/v1/projects/beta/webhooks/"+created.ID, adminToken, nil).problem(t, 404, "not_found")
	})
	t.Run("Notifications", func(t *testing.T) {
		var s wire.NotificationSettings
		e.do("GET", "/v1/projects/alpha/notifications", human.Token, nil).ok(t, 200, &s)
		if s.AnswerLinks || s.AnswerLinkTTLSeconds != 86400 {
			t.Fatalf("defaults %+v", s)
		}
		e.do("PATCH", "/v1/projects/alpha/notifications", human.Token, `{"answer_links": true, "answer_link_ttl_seconds": 3600}`).ok(t, 200, &s)
		if !s.AnswerLinks || s.AnswerLinkTTLSeconds != 3600 {
			t.Fatalf("after PATCH %+v", s)
		}
		e.do("PATCH", "/v1/projects/alpha/notifications", human.Token, `{"answer_link_ttl_seconds": 5}`).problem(t, 400, "invalid_argument")
		e.do("PATCH", "/v1/projects/alpha/notifications", agent.Token, `{"answer_links": false}`).problem(t, 403, "forbidden")
	})
	t.Run("Delete", func(t *testing.T) {
		e.do("DELETE", base+"/"+created.ID, human.Token, nil).ok(t, 204, nil)
		e.do("DELETE", base+"/"+created.ID, human.Token, nil).problem(t, 404, "not_found")
	})
}
