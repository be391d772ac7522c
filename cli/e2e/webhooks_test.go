package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/events"
)

// signedBy is a receiver's check of a Standard Webhooks signature, from
// the specification alone.
func signedBy(secret, id, timestamp string, body []byte, header string) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + timestamp + "." + string(body)))
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, s := range strings.Fields(header) {
		if hmac.Equal([]byte(s), []byte(want)) {
			return true
		}
	}
	return false
}

// TestWebhookKilledMidDelivery: the replica delivering an event is killed
// (SIGKILL) while the receiver holds its request; nothing is lost: once
// the dead replica's lock passes (by the database's clock), another
// replica delivers the same event again, with the same webhook-id.
func TestWebhookKilledMidDelivery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := dbtest.URL(t)
	type hit struct {
		id, ts, sig string
		body        []byte
	}
	var (
		mu    sync.Mutex
		hits  []hit
		first = make(chan struct{})
	)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		hits = append(hits, hit{r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature"), b})
		n := len(hits)
		mu.Unlock()
		if n == 1 {
			close(first)
			<-r.Context().Done() // held until the delivering replica dies
			return
		}
	}))
	defer rc.Close()
	got := func() []hit {
		mu.Lock()
		defer mu.Unlock()
		return append([]hit(nil), hits...)
	}

	flags := []string{"--webhooks-allow-private", "--webhooks-timeout", "1s"}
	r1 := startReplicaServe(t, dbURL, flags...)
	admin, err := client.New(r1.url, adminToken)
	if err != nil {
		t.Fatal(err)
	}
	p, err := admin.CreateProject(ctx, "hooks")
	if err != nil {
		t.Fatal(err)
	}
	wh, err := admin.CreateWebhook(ctx, "hooks", client.CreateWebhookRequest{URL: rc.URL + "/in"})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	seq, err := events.Append(ctx, pool, events.New{Project: uuid.MustParse(p.ID), Type: events.ItemCreated, Actor: "token:test"})
	if err != nil {
		t.Fatal(err)
	}

	select {
	case <-first:
	case <-time.After(time.Minute):
		t.Fatalf("the receiver got nothing within a minute; replica log:\n%s", r1.logs)
	}
	r1.kill(t)
	r2 := startReplicaServe(t, dbURL, flags...)
	eventually(t, time.Minute, "the event delivered again by the second replica", func() bool { return len(got()) >= 2 })

	hs := got()
	wantID := "evt_" + p.ID + "_" + strconv.FormatInt(seq, 10)
	for i, h := range hs[:2] {
		if h.id != wantID {
			t.Errorf("request %d: webhook-id %s, want %s on every attempt", i, h.id, wantID)
		}
		if !signedBy(wh.Secret, h.id, h.ts, h.body, h.sig) {
			t.Errorf("request %d: the independent check refused the signature %s", i, h.sig)
		}
	}
	api, err := client.New(r2.url, adminToken)
	if err != nil {
		t.Fatal(err)
	}
	var ds *client.DeliveryList
	eventually(t, 30*time.Second, "the delivery recorded as delivered", func() bool {
		ds, err = api.ListDeliveries(ctx, "hooks", wh.ID, 0, 0)
		return err == nil && len(ds.Deliveries) == 1 && ds.Deliveries[0].State == "delivered"
	})
	if d := ds.Deliveries[0]; d.Attempts != 2 || d.Seq != seq || d.StatusCode == nil || *d.StatusCode != 200 {
		t.Fatalf("delivery %+v: want one record, delivered on the second attempt", d)
	}
}

func TestWebhooksCommands(t *testing.T) {
	t.Parallel()
	e := setup(t)
	// Created disabled: nothing is sent to the example address.
	r := e.run(e.humanToken, nil, "webhooks", "create", "https://hooks.example.com/wg", "--events", "attention.opened,lease.ended",
		"--format", "slack", "--recipient", "ann", "--disabled")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "whsec_") || !strings.Contains(r.stderr, "shown only once") {
		t.Fatalf("webhooks create: %v", r)
	}
	var list struct{ Webhooks []client.Webhook }
	e.mustJSON(e.humanToken, &list, "webhooks", "ls")
	if len(list.Webhooks) != 1 || list.Webhooks[0].Format != "slack" || list.Webhooks[0].Enabled ||
		list.Webhooks[0].DisabledAt == nil || strings.Join(list.Webhooks[0].EventTypes, ",") != "lease.ended,attention.opened" {
		t.Fatalf("webhooks ls --json: %+v", list)
	}
	id := list.Webhooks[0].ID
	if r := e.run(e.humanToken, nil, "webhooks", "ls"); r.code != 0 || !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, "disabled") {
		t.Fatalf("webhooks ls: %v", r)
	}
	// The 8 characters a table shows are enough, as for every other id.
	if r := e.run(e.humanToken, nil, "webhooks", "deliveries", id[:8]); r.code != 0 || !strings.Contains(r.stdout, "SEQ") {
		t.Fatalf("webhooks deliveries: %v", r)
	}
	if r := e.run(e.humanToken, nil, "webhooks", "enable", id[:8]); r.code != 0 || !strings.Contains(r.stdout, "webhook "+id+" enabled") {
		t.Fatalf("webhooks enable by prefix: %v", r)
	}
	if r := e.run(e.humanToken, nil, "webhooks", "disable", id[:8]); r.code != 0 || !strings.Contains(r.stdout, "webhook "+id+" disabled") {
		t.Fatalf("webhooks disable by prefix: %v", r)
	}
	// A new secret, printed once; the old one signs beside it for --grace.
	if r := e.run(e.humanToken, nil, "webhooks", "rotate", id[:8], "--grace", "2h"); r.code != 0 || !strings.HasPrefix(r.stdout, "whsec_") ||
		!strings.Contains(r.stderr, "shown only once") || !strings.Contains(r.stderr, "the old one stops signing until") {
		t.Fatalf("webhooks rotate: %v", r)
	}
	var rotated client.Webhook
	e.mustJSON(e.humanToken, &rotated, "webhooks", "rotate", id, "--grace", "0")
	if rotated.ID != id || rotated.PreviousSecretUntil == nil {
		t.Fatalf("webhooks rotate --json: %+v", rotated)
	}
	e.wantExit(e.humanToken, 2, "grace_seconds", "webhooks", "rotate", id, "--grace", "200h")
	e.wantExit(e.humanToken, 5, "no webhook id starts with", "webhooks", "rm", "ffffffff")
	e.wantExit(e.humanToken, 2, "first characters", "webhooks", "rm", "zz")
	e.wantExit(e.humanToken, 2, "url", "webhooks", "create", "http://10.0.0.1/")
	e.wantExit(e.agentToken, 7, "forbidden", "webhooks", "ls")
	if r := e.run(e.humanToken, nil, "webhooks", "rm", id[:8]); r.code != 0 || !strings.Contains(r.stdout, "webhook "+id+" deleted") {
		t.Fatalf("webhooks rm: %v", r)
	}
	e.mustJSON(e.humanToken, &list, "webhooks", "ls")
	if len(list.Webhooks) != 0 {
		t.Fatalf("after rm: %+v", list)
	}
}

// TestWebhooksCreateTypes: `webhooks create` takes the event types as
// --types, as `events` does; --events stays an alias.
func TestWebhooksCreateTypes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, flag := range []string{"--types", "--events"} {
		var w client.Webhook
		e.mustJSON(e.humanToken, &w, "webhooks", "create", "https://hooks.example.com/"+strings.TrimLeft(flag, "-"),
			flag, "attention.opened,lease.ended", "--disabled")
		if strings.Join(w.EventTypes, ",") != "lease.ended,attention.opened" {
			t.Fatalf("webhooks create %s: event types %v", flag, w.EventTypes)
		}
	}
}
