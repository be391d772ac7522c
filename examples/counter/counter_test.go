package counter_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/examples/counter"
	"github.com/workgraph-dev/workgraph/fence"
)

// dest is a counter destination on a database of its own (fresh: the
// destination commits), trusting one key for one project.
type dest struct {
	t       *testing.T
	svc     *counter.Service
	pool    *pgxpool.Pool
	url     string
	key     ed25519.PrivateKey
	project string
	item    string
}

func setup(t *testing.T) *dest {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	// A new database (dbtest.Fresh): counter.Migrate creates the
	// destination's tables, a schema a reused database must not keep.
	pool := dbtest.Fresh(t)
	if err := counter.Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	d := &dest{t: t, pool: pool, key: key, project: uuid.NewString(), item: uuid.NewString()}
	d.svc, err = counter.New(pool, []ed25519.PublicKey{pub}, d.project, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.svc.Handler())
	t.Cleanup(srv.Close)
	d.url = srv.URL
	return d
}

// token signs a token of epoch for d's item (lease ids differ per epoch,
// as a reclaim's do).
func (d *dest) token(key ed25519.PrivateKey, project string, epoch int64) string {
	d.t.Helper()
	tok, err := fence.Sign(key, fence.Claims{Lease: uuid.NewString(), Item: d.item, Project: project, Epoch: epoch, Expires: time.Unix(0, 0)})
	if err != nil {
		d.t.Fatal(err)
	}
	return tok
}

type answer struct {
	status   int
	code     string
	units    int64
	replayed bool
	body     string
}

// add posts units to counter "c" with the token and operation id ("":
// header left out).
func (d *dest) add(token, op string, units int) answer {
	d.t.Helper()
	body, _ := json.Marshal(map[string]int{"units": units})
	req, _ := http.NewRequest(http.MethodPost, d.url+"/counters/c/add", bytes.NewReader(body))
	if token != "" {
		req.Header.Set(fence.HeaderFence, token)
	}
	if op != "" {
		req.Header.Set(fence.HeaderOperation, op)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out struct {
		Code  string `json:"code"`
		Units int64  `json:"units"`
	}
	json.Unmarshal(raw, &out)
	return answer{status: res.StatusCode, code: out.Code, units: out.Units, replayed: res.Header.Get(fence.HeaderReplayed) == "true", body: string(raw)}
}

// want checks the committed state: the counter's units, the item's
// high-water mark and receipts.
func (d *dest) want(units int64, mark fence.Mark) {
	d.t.Helper()
	ctx := context.Background()
	c, err := d.svc.Counter(ctx, "c")
	if err != nil {
		d.t.Fatal(err)
	}
	m, err := d.svc.Gate().Marks(ctx, d.pool, d.project+"/"+d.item)
	if err != nil {
		d.t.Fatal(err)
	}
	if c.Units != units || m != mark {
		d.t.Fatalf("committed: %d units, mark %+v; want %d units, mark %+v", c.Units, m, units, mark)
	}
}

func wantRefused(t *testing.T, got answer, status int, code string) {
	t.Helper()
	if got.status != status || got.code != code {
		t.Fatalf("answer %d %s (%s), want %d %s", got.status, got.code, got.body, status, code)
	}
}

func TestMiddleware(t *testing.T) {
	t.Parallel()

	t.Run("ErrFenceStale", func(t *testing.T) {
		t.Parallel()
		d := setup(t)
		if got := d.add(d.token(d.key, d.project, 2), "", 4); got.status != http.StatusOK || got.units != 4 {
			t.Fatalf("epoch 2: %+v", got)
		}
		wantRefused(t, d.add(d.token(d.key, d.project, 1), "", 4), http.StatusConflict, fence.CodeFenceStale)
		d.want(4, fence.Mark{HighWater: 2})
	})
	t.Run("ErrFenceInvalid", func(t *testing.T) {
		t.Parallel()
		d := setup(t)
		_, other, _ := ed25519.GenerateKey(rand.Reader)
		wantRefused(t, d.add(d.token(other, d.project, 1), "", 4), http.StatusUnauthorized, fence.CodeFenceInvalid)
		// A genuine token whose claims were edited (a larger epoch) keeps
		// its signature, which no longer matches.
		tok := d.token(d.key, d.project, 1)
		rest := strings.TrimPrefix(tok, fence.TokenPrefix)
		body64, sig, _ := strings.Cut(rest, ".")
		claims, _ := base64.RawURLEncoding.DecodeString(body64)
		edited := bytes.Replace(claims, []byte(`"epoch":1`), []byte(`"epoch":9`), 1)
		forged := fence.TokenPrefix + base64.RawURLEncoding.EncodeToString(edited) + "." + sig
		wantRefused(t, d.add(forged, "", 4), http.StatusUnauthorized, fence.CodeFenceInvalid)
		wantRefused(t, d.add("not-a-token", "", 4), http.StatusUnauthorized, fence.CodeFenceInvalid)
		wantRefused(t, d.add("", "", 4), http.StatusUnauthorized, fence.CodeFenceRequired)
		d.want(0, fence.Mark{})
	})
	t.Run("ErrFenceOutOfScope", func(t *testing.T) {
		t.Parallel()
		d := setup(t)
		d.svc.RequireScopes()
		scoped := func(epoch int64, scopes ...string) string {
			tok, err := fence.Sign(d.key, fence.Claims{Lease: uuid.NewString(), Item: d.item, Project: d.project, Epoch: epoch, Scopes: scopes})
			if err != nil {
				t.Fatal(err)
			}
			return tok
		}
		// Outside the scopes (another counter, a path below it, none at
		// all): refused before the gate, nothing applied, no mark raised.
		wantRefused(t, d.add(scoped(1, "counter:other"), "", 4), http.StatusForbidden, fence.CodeFenceOutOfScope)
		wantRefused(t, d.add(scoped(1, "counter:c/x"), "", 4), http.StatusForbidden, fence.CodeFenceOutOfScope)
		wantRefused(t, d.add(scoped(1), "", 4), http.StatusForbidden, fence.CodeFenceOutOfScope)
		d.want(0, fence.Mark{})
		// Inside: counter c itself, a glob matching it, the whole resource.
		for epoch, scopes := range [][]string{{"counter:c"}, {"db", "counter:*"}, {"counter"}} {
			if got := d.add(scoped(int64(epoch+1), scopes...), "", 1); got.status != http.StatusOK {
				t.Fatalf("scopes %v: %+v, want 200", scopes, got)
			}
		}
		d.want(3, fence.Mark{HighWater: 3})
	})
	t.Run("ErrFenceWrongProject", func(t *testing.T) {
		t.Parallel()
		d := setup(t)
		wantRefused(t, d.add(d.token(d.key, uuid.NewString(), 1), "", 4), http.StatusForbidden, fence.CodeFenceWrongProject)
		d.want(0, fence.Mark{})
	})
	t.Run("ErrInvalidOperation", func(t *testing.T) {
		// An operation id that is not text the database can store (bytes
		// that are not UTF-8: HTTP allows them in a header) is the
		// client's error, 400, not 503 unavailable, which a client
		// retries for ever; nothing is applied.
		t.Parallel()
		d := setup(t)
		for _, op := range []string{"op-\xff", "op-\xc3(", strings.Repeat("o", fence.MaxOperationLen+1)} {
			wantRefused(t, d.add(d.token(d.key, d.project, 1), op, 4), http.StatusBadRequest, fence.CodeInvalidOperation)
		}
		d.want(0, fence.Mark{})
	})
	t.Run("Replay", func(t *testing.T) {
		t.Parallel()
		d := setup(t)
		tok := d.token(d.key, d.project, 1)
		first := d.add(tok, "op-1", 4)
		if first.status != http.StatusOK || first.replayed || first.units != 4 {
			t.Fatalf("first: %+v", first)
		}
		again := d.add(tok, "op-1", 4)
		if again.status != http.StatusOK || !again.replayed || again.body != first.body {
			t.Fatalf("identical replay: %+v; want 200, replayed, the first answer %q", again, first.body)
		}
		d.want(4, fence.Mark{HighWater: 1, Receipts: 1})
	})
	t.Run("ErrOperationConflict", func(t *testing.T) {
		t.Parallel()
		d := setup(t)
		if got := d.add(d.token(d.key, d.project, 1), "op-1", 4); got.status != http.StatusOK {
			t.Fatalf("first: %+v", got)
		}
		// Even under a newer lease: the conflict rolls its raised mark back.
		wantRefused(t, d.add(d.token(d.key, d.project, 2), "op-1", 5), http.StatusConflict, fence.CodeOperationConflict)
		d.want(4, fence.Mark{HighWater: 1, Receipts: 1})
	})
	t.Run("RollbackLeavesMark", func(t *testing.T) {
		t.Parallel()
		d := setup(t)
		if got := d.add(d.token(d.key, d.project, 1), "", 1); got.status != http.StatusOK {
			t.Fatalf("first: %+v", got)
		}
		var inside fence.Mark
		d.svc.AfterEffect = func(ctx context.Context, tx pgx.Tx) error {
			inside, _ = d.svc.Gate().Marks(ctx, tx, d.project+"/"+d.item)
			return errors.New("deliberate failure after the effect")
		}
		wantRefused(t, d.add(d.token(d.key, d.project, 2), "op-1", 4), http.StatusInternalServerError, "internal")
		if inside.HighWater != 2 {
			t.Fatalf("the failing transaction saw mark %d, want 2", inside.HighWater)
		}
		d.want(1, fence.Mark{HighWater: 1})
	})
}
