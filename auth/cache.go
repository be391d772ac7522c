package auth

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
)

// revocationChannel is where the tokens table announces changed tokens
// (migration 00007).
const revocationChannel = "workgraph_tokens"

// cacheTTL bounds how long a verified token is trusted without reading it
// again, whatever the notifications say.
const cacheTTL = 30 * time.Second

// cacheMax bounds the number of cached tokens; a full cache starts over.
const cacheMax = 10_000

// tokenCache keeps verified token rows so that a request need not read its
// token. It is used only while a Revocations listener holds its LISTEN
// connection: a revocation on any replica drops the token from every cache
// when the notification arrives, and the replica that revokes drops it
// before answering. While the listener is down the cache is empty and
// unused, so a missed notification can never keep a revoked token alive.
//
// A read that raced with a revocation must not put the row it read back
// after the revocation dropped it: every drop moves gen on, and put takes
// the gen its caller saw before reading and refuses when it has moved.
type tokenCache struct {
	mu      sync.Mutex
	enabled bool
	gen     uint64
	m       map[uuid.UUID]cachedToken
}

type cachedToken struct {
	row     dbq.Token
	fetched time.Time // process clock: only ages the entry, decides nothing else
}

// get returns a cached row, or the generation to hand to put after
// reading the row from the database.
func (c *tokenCache) get(id uuid.UUID, now time.Time) (row dbq.Token, hit bool, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[id]
	if !c.enabled || !ok || now.Sub(e.fetched) > cacheTTL {
		return dbq.Token{}, false, c.gen
	}
	return e.row, true, c.gen
}

// put caches a row read from the database, unless a drop happened since
// get returned gen.
func (c *tokenCache) put(row dbq.Token, now time.Time, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.enabled || c.gen != gen {
		return
	}
	if len(c.m) >= cacheMax {
		clear(c.m)
	}
	c.m[row.ID] = cachedToken{row: row, fetched: now}
}

func (c *tokenCache) drop(id uuid.UUID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.m, id)
}

// setEnabled turns the cache on or off; either way it starts empty.
func (c *tokenCache) setEnabled(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.enabled = on
	c.m = make(map[uuid.UUID]cachedToken)
}

// Revocations is the background service that keeps a Service's token cache
// honest: it LISTENs for changed tokens and drops them, and enables the
// cache only while it listens.
type Revocations struct {
	svc    *Service
	pool   *pgxpool.Pool
	log    *slog.Logger
	cancel context.CancelFunc
	done   chan struct{}
	// listening is signalled (not closed) each time a LISTEN becomes
	// active; tests wait on it.
	listening chan struct{}
}

// NewRevocations returns the listener for svc's cache; Start runs it.
func NewRevocations(svc *Service, log *slog.Logger) *Revocations {
	if log == nil {
		log = slog.Default()
	}
	return &Revocations{svc: svc, pool: svc.pool, log: log, listening: make(chan struct{}, 1)}
}

// Start listens in the background until Stop.
func (r *Revocations) Start(ctx context.Context) {
	ctx, r.cancel = context.WithCancel(ctx)
	r.done = make(chan struct{})
	go r.run(ctx)
}

// Stop ends the listener and disables the cache.
func (r *Revocations) Stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	<-r.done
	r.svc.cache.setEnabled(false)
}

func (r *Revocations) run(ctx context.Context) {
	defer close(r.done)
	db.Listen(ctx, r.pool, revocationChannel, r.log,
		func() {
			r.svc.cache.setEnabled(true)
			select {
			case r.listening <- struct{}{}:
			default:
			}
		},
		func(payload string) {
			id, err := uuid.Parse(payload)
			if err != nil {
				// Unknown payload: forget everything rather than guess.
				r.svc.cache.setEnabled(true)
				return
			}
			r.svc.cache.drop(id)
		},
		// Tokens are read on every request until the connection is back.
		func() { r.svc.cache.setEnabled(false) })
}
