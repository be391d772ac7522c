package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/client"
)

// httpTransport is shared by every simulated agent: keep-alive connections,
// enough idle ones per host that no agent ever waits for a new connection.
func newHTTPClient(agents int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns:        agents + 16,
		MaxIdleConnsPerHost: agents + 16,
		IdleConnTimeout:     2 * time.Minute,
	}}
}

// leaseSeconds is the TTL REST agents ask for.
const leaseSeconds = 900

// clientAgent is an agent using the project's Go client (package client),
// as a real agent would: every POST carries a fresh Idempotency-Key.
type clientAgent struct {
	c       *client.Client
	project string
	worker  string
}

func (a *clientAgent) claim(ctx context.Context) (heldLease, error) {
	cl, err := a.c.Claim(ctx, a.project, client.ClaimRequest{Worker: a.worker, LeaseSeconds: leaseSeconds})
	if errors.Is(err, client.ErrNothingReady) {
		return heldLease{}, errEmpty
	}
	if err != nil {
		return heldLease{}, asHTTPError(err)
	}
	return parseLease(cl.Lease.ID, cl.Lease.ItemID, cl.Lease.Epoch)
}

func (a *clientAgent) heartbeat(ctx context.Context, l heldLease) error {
	_, err := a.c.Heartbeat(ctx, l.id.String(), client.HeartbeatRequest{Epoch: l.epoch})
	return asHTTPError(err)
}

func (a *clientAgent) complete(ctx context.Context, l heldLease) error {
	_, err := a.c.Complete(ctx, l.id.String(), client.CompleteRequest{Epoch: l.epoch, Result: json.RawMessage(`{"ok":true}`)})
	return asHTTPError(err)
}

func (a *clientAgent) release(ctx context.Context, l heldLease) error {
	_, err := a.c.Release(ctx, l.id.String(), client.ReleaseRequest{Epoch: l.epoch})
	return asHTTPError(err)
}

func parseLease(id, item string, epoch int64) (heldLease, error) {
	lid, err := uuid.Parse(id)
	if err != nil {
		return heldLease{}, fmt.Errorf("lease id %q: %w", id, err)
	}
	iid, err := uuid.Parse(item)
	if err != nil {
		return heldLease{}, fmt.Errorf("item id %q: %w", item, err)
	}
	return heldLease{id: lid, item: iid, epoch: epoch}, nil
}

// httpError is a non-2xx answer.
type httpError struct {
	Status int
	Code   string
	Detail string
}

func (e *httpError) Error() string { return fmt.Sprintf("HTTP %d %s: %s", e.Status, e.Code, e.Detail) }

func asHTTPError(err error) error {
	var ce *client.Error
	if errors.As(err, &ce) {
		return &httpError{Status: ce.Status, Code: ce.Code, Detail: ce.Detail}
	}
	return err
}

// rawAgent speaks the same routes with bare net/http and no
// Idempotency-Key: the cost of the API without request de-duplication.
type rawAgent struct {
	http    *http.Client
	base    string
	token   string
	project string
	worker  string
}

func (a *rawAgent) post(ctx context.Context, path string, in, out any) (int, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+a.token)
	resp, err := a.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode >= 300 {
		var p struct {
			Code   string `json:"code"`
			Detail string `json:"detail"`
		}
		json.Unmarshal(data, &p)
		return resp.StatusCode, &httpError{Status: resp.StatusCode, Code: p.Code, Detail: p.Detail}
	}
	if out != nil && resp.StatusCode != http.StatusNoContent {
		return resp.StatusCode, json.Unmarshal(data, out)
	}
	return resp.StatusCode, nil
}

func (a *rawAgent) claim(ctx context.Context) (heldLease, error) {
	var out struct {
		Lease struct {
			ID     string `json:"id"`
			ItemID string `json:"item_id"`
			Epoch  int64  `json:"epoch"`
		} `json:"lease"`
	}
	status, err := a.post(ctx, "/v1/projects/"+a.project+"/claims",
		map[string]any{"worker": a.worker, "lease_seconds": leaseSeconds}, &out)
	if err != nil {
		return heldLease{}, err
	}
	if status == http.StatusNoContent {
		return heldLease{}, errEmpty
	}
	return parseLease(out.Lease.ID, out.Lease.ItemID, out.Lease.Epoch)
}

func (a *rawAgent) heartbeat(ctx context.Context, l heldLease) error {
	_, err := a.post(ctx, "/v1/leases/"+l.id.String()+"/heartbeat", map[string]any{"epoch": l.epoch}, nil)
	return err
}

func (a *rawAgent) complete(ctx context.Context, l heldLease) error {
	_, err := a.post(ctx, "/v1/leases/"+l.id.String()+"/complete",
		map[string]any{"epoch": l.epoch, "result": map[string]bool{"ok": true}}, nil)
	return err
}

func (a *rawAgent) release(ctx context.Context, l heldLease) error {
	_, err := a.post(ctx, "/v1/leases/"+l.id.String()+"/release", map[string]any{"epoch": l.epoch}, nil)
	return err
}
