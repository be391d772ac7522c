package fence_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/fence"
)

// keysServer serves a keys document that a test changes, counting the
// fetches; fail makes it answer 500.
type keysServer struct {
	mu      sync.Mutex
	keys    []ed25519.PublicKey
	fail    bool
	fetches int
}

func (k *keysServer) set(keys ...ed25519.PublicKey) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.keys = keys
}

func (k *keysServer) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.fetches++
	if k.fail {
		http.Error(w, "down", http.StatusInternalServerError)
		return
	}
	var doc fence.Keys
	for _, pub := range k.keys {
		doc.Keys = append(doc.Keys, fence.PublicKeyEntry(pub))
	}
	json.NewEncoder(w).Encode(doc)
}

func (k *keysServer) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.fetches
}

func newKey(t *testing.T) (ed25519.PublicKey, func(epoch int64) string) {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return pub, func(epoch int64) string {
		tok, err := fence.Sign(key, fence.Claims{Lease: "l", Item: "i", Project: "p", Epoch: epoch})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
}

// TestKeySetFollowsRotation: a destination that follows the keys
// document accepts tokens of a key the server started signing with after
// it first fetched (a rotation), keeps accepting the old key while the
// server publishes it, stops once the server retired it, and does not
// fetch again for every token that names an unknown key.
func TestKeySetFollowsRotation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	oldPub, oldTok := newKey(t)
	newPub, newTok := newKey(t)
	_, forgedTok := newKey(t)
	srv := &keysServer{}
	srv.set(oldPub)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	now := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	ks := &fence.KeySet{URL: ts.URL}
	ks.SetClock(func() time.Time { return now })

	if c, err := ks.Verify(ctx, oldTok(1)); err != nil || c.Epoch != 1 {
		t.Fatalf("a token of the published key: %+v, %v", c, err)
	}
	// The server rotates: it publishes both and signs with the new key.
	srv.set(oldPub, newPub)
	now = now.Add(fence.DefaultMinRefetch)
	if c, err := ks.Verify(ctx, newTok(2)); err != nil || c.Epoch != 2 {
		t.Fatalf("a token of the key the server rotated to: %+v, %v", c, err)
	}
	if _, err := ks.Verify(ctx, oldTok(1)); err != nil {
		t.Fatalf("a token of the old key, still published: %v", err)
	}
	fetches := srv.count()
	if fetches != 2 {
		t.Errorf("%d fetches, want 2 (the first use and the rotation)", fetches)
	}

	t.Run("ErrForgedKeyIDFetchesOncePerMinRefetch", func(t *testing.T) {
		for range 5 {
			if _, err := ks.Verify(ctx, forgedTok(3)); !errors.Is(err, fence.ErrInvalidToken) {
				t.Fatalf("a token of an unknown key: %v, want ErrInvalidToken", err)
			}
		}
		if got := srv.count(); got > fetches+1 {
			t.Errorf("%d fetches for 5 tokens of an unknown key within MinRefetch, want at most 1", got-fetches)
		}
	})

	t.Run("ErrRetired", func(t *testing.T) {
		srv.set(newPub) // the old key's grace has passed
		now = now.Add(fence.DefaultMaxAge)
		if _, err := ks.Verify(ctx, oldTok(1)); !errors.Is(err, fence.ErrInvalidToken) {
			t.Fatalf("a token of a retired key: %v, want ErrInvalidToken", err)
		}
		if _, err := ks.Verify(ctx, newTok(2)); err != nil {
			t.Fatalf("a token of the current key: %v", err)
		}
	})

	t.Run("FetchFailsKeepsTheKeys", func(t *testing.T) {
		srv.mu.Lock()
		srv.fail = true
		srv.mu.Unlock()
		now = now.Add(fence.DefaultMaxAge)
		if _, err := ks.Verify(ctx, newTok(2)); err != nil {
			t.Fatalf("the keys held should stay trusted while the server does not answer: %v", err)
		}
	})
}

// TestKeySetUnavailable: without any key because the document cannot be
// fetched, a token is not judged invalid: the middleware answers 503
// unavailable, applying nothing.
func TestKeySetUnavailable(t *testing.T) {
	t.Parallel()
	srv := &keysServer{fail: true}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	_, tok := newKey(t)
	ks := &fence.KeySet{URL: ts.URL}
	if _, err := ks.Verify(context.Background(), tok(1)); !errors.Is(err, fence.ErrKeysUnavailable) || errors.Is(err, fence.ErrInvalidToken) {
		t.Fatalf("Verify with no key fetched: %v, want ErrKeysUnavailable", err)
	}
	mw := &fence.Middleware{KeySet: ks} // no DB: the refusal comes before it
	h := mw.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("the handler ran") }))
	req := httptest.NewRequest(http.MethodPost, "/add", strings.NewReader(`{}`))
	req.Header.Set(fence.HeaderFence, tok(1))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), `"code":"unavailable"`) {
		t.Fatalf("middleware: %d %s, want 503 unavailable", rec.Code, rec.Body)
	}
}

// TestKeySetFetchTimeout: a keys server that does not answer holds a
// verification no longer than FetchTimeout (others wait for the fetch in
// progress), and the answer is ErrKeysUnavailable.
func TestKeySetFetchTimeout(t *testing.T) {
	t.Parallel()
	hung := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hung:
		case <-r.Context().Done():
		}
	}))
	defer ts.Close()
	defer close(hung)
	_, tok := newKey(t)
	ks := &fence.KeySet{URL: ts.URL, FetchTimeout: 100 * time.Millisecond}
	start := time.Now()
	_, err := ks.Verify(context.Background(), tok(1))
	if !errors.Is(err, fence.ErrKeysUnavailable) {
		t.Fatalf("Verify against a server that does not answer: %v, want ErrKeysUnavailable", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Verify waited %s for a server that does not answer, want about FetchTimeout", took)
	}
}
