package api_test

import (
	"strings"
	"testing"
)

// TestStopCarriesItsReason: the reason a person gives when asking a worker
// to stop is kept on the lease (stop_note) and reaches the worker with its
// next heartbeat; the first request's reason stands; a reason over 64 KiB
// is refused naming it, and asks nothing.
func TestStopCarriesItsReason(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	f.mustItem(f.human.Token, map[string]any{"title": "work"})
	c := f.mustClaim("w1")
	stop := func(body any) resp { return f.do("POST", "/v1/leases/"+c.Lease.ID+"/stop", f.human.Token, body) }
	type withNote struct {
		StopRequested bool    `json:"stop_requested"`
		StopNote      *string `json:"stop_note"`
	}

	field(t, stop(map[string]any{"reason": strings.Repeat("r", 65537)}).problem(t, 400, "invalid_argument"), "reason")
	var l withNote
	f.do("GET", "/v1/leases/"+c.Lease.ID, f.agent.Token, nil).ok(t, 200, &l)
	if l.StopRequested || l.StopNote != nil {
		t.Fatalf("a refused stop asked the worker to stop: %+v", l)
	}

	stop(map[string]any{"reason": "wrong approach: use the index"}).ok(t, 200, &l)
	if !l.StopRequested || l.StopNote == nil || *l.StopNote != "wrong approach: use the index" {
		t.Fatalf("the stop's answer: %+v", l)
	}
	stop(map[string]any{"reason": "a second thought"}).ok(t, 200, &l)
	if l.StopNote == nil || *l.StopNote != "wrong approach: use the index" {
		t.Fatalf("after a second stop: note %v, want the first request's", l.StopNote)
	}
	var hb struct {
		StopRequested bool     `json:"stop_requested"`
		StopReason    *string  `json:"stop_reason"`
		Lease         withNote `json:"lease"`
	}
	f.mutate(f.agent.Token, c.Lease.ID, "heartbeat", map[string]any{"epoch": c.Lease.Epoch}).ok(t, 200, &hb)
	if !hb.StopRequested || hb.StopReason == nil || *hb.StopReason != "requested" ||
		hb.Lease.StopNote == nil || *hb.Lease.StopNote != "wrong approach: use the index" {
		t.Fatalf("heartbeat after the stop: %+v", hb)
	}

	// Without a reason the note is null.
	f.mutate(f.agent.Token, c.Lease.ID, "release", map[string]any{"epoch": c.Lease.Epoch}).ok(t, 200, nil)
	c2 := f.mustClaim("w1")
	f.do("POST", "/v1/leases/"+c2.Lease.ID+"/stop", f.human.Token, nil).ok(t, 200, &l)
	if !l.StopRequested || l.StopNote != nil {
		t.Fatalf("a stop without a reason: %+v", l)
	}
}
