package idempotency

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// TTL is how long a record and its answer are kept.
const TTL = 24 * time.Hour

// Liveness of a record in progress: its owner locks it for LockFor by the
// database's clock and renews the lock every RenewEvery while it runs. A
// record whose owner died is free for a retry at most LockFor later.
const (
	LockFor    = 5 * time.Second
	RenewEvery = LockFor / 3
)

// Store reads and writes idempotency records.
type Store struct {
	// pool is a db.Carrier: a request's token check (db.Precheck) rides
	// with Begin, its first statement.
	pool *db.Carrier
	// raw is the pool itself, for Judge.
	raw   *pgxpool.Pool
	clock clock.Clock
	q     *dbq.Queries
}

// NewStore returns a store on pool (the API gives it a pool of
// asynchronous-commit connections: see db.OpenAsyncCommit); a nil clock is
// the database's.
func NewStore(pool *pgxpool.Pool, clk clock.Clock) *Store {
	if clk == nil {
		clk = clock.Database{}
	}
	return &Store{pool: db.Carrying(pool), raw: pool, clock: clk, q: dbq.New()}
}

// Request names one request's claim on a record: the token and key it
// came with, the hash of the request (method, path, body) and the owner id
// of the run.
type Request struct {
	TokenID uuid.UUID
	Key     string
	Hash    []byte
	Owner   uuid.UUID
}

// Record is the stored state of a record another request began.
type Record struct {
	Hash []byte
	// Status, ContentType, Response and ETag (nil: the answer had none)
	// are the answer; Status is nil while the request has not finished.
	Status      *int
	ContentType *string
	Response    []byte
	ETag        *string
	// EffectAt is when a transaction of the request committed an effect;
	// EffectRef names that effect (for a claim, the lease granted).
	EffectAt  *time.Time
	EffectRef *string
	// OwnerAlive: the record is still locked by the request running it.
	OwnerAlive bool
}

// Begin claims the record of r for r.Owner, locked for LockFor. It
// reports false when another request holds a live record of the key (read
// it with Get). An expired record is taken over, and so is one of the same
// request whose owner died before its effect committed.
func (s *Store) Begin(ctx context.Context, r Request) (bool, error) {
	// BeginCarried's statement, sent alone: its refusal says the record
	// is held.
	err := s.q.BeginIdempotentRequestCarried(ctx, s.pool, s.beginParams(r))
	if Taken(err) {
		return false, nil
	}
	if err != nil {
		return false, db.Translate(err)
	}
	return true, nil
}

func (s *Store) beginParams(r Request) dbq.BeginIdempotentRequestCarriedParams {
	return dbq.BeginIdempotentRequestCarriedParams{
		TokenID: r.TokenID, Key: r.Key, RequestHash: r.Hash, Owner: &r.Owner,
		LockSeconds: LockFor.Seconds(), Now: s.clock.Now(),
	}
}

// BeginCarried is Begin as a precondition of the request (db.Precheck):
// the returned context carries it, and the request's first statement on a
// db.Carrier sends it ahead, in one round trip and one implicit
// transaction. When another request holds a live record of the key, that
// statement fails with a refusal (Taken) and nothing of its batch commits:
// read the record with Get. A request that sends no statement judges it
// with Judge.
func (s *Store) BeginCarried(ctx context.Context, r Request) (context.Context, error) {
	return db.AddPrecheck(ctx, func(q db.DBTX) error {
		return s.q.BeginIdempotentRequestCarried(ctx, q, s.beginParams(r))
	})
}

// Judge runs the preconditions ctx carries (BeginCarried's among them)
// when no statement of the request did, and returns their refusal (Taken,
// or another kind) or nil when they passed.
func (s *Store) Judge(ctx context.Context) error {
	return db.SettlePrechecks(ctx, s.raw)
}

// Taken reports whether err is BeginCarried's refusal: another request
// holds the record.
func Taken(err error) bool { return db.PrecheckRefusal(err) == "idempotency_taken" }

// Get reads the record of (token, key). Errors: not_found (no record, for
// example one that expired since Begin).
func (s *Store) Get(ctx context.Context, tokenID uuid.UUID, key string) (Record, error) {
	row, err := s.q.GetIdempotentRequest(ctx, s.pool, dbq.GetIdempotentRequestParams{
		TokenID: tokenID, Key: key, Now: s.clock.Now(),
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return Record{}, wgerr.New(wgerr.CodeNotFound, "no idempotency record for key %q", key)
	}
	if err != nil {
		return Record{}, db.Translate(err)
	}
	rec := Record{Hash: row.RequestHash, ContentType: row.ContentType, Response: row.Response, ETag: row.Etag,
		EffectAt: row.EffectAt, EffectRef: row.EffectRef, OwnerAlive: row.OwnerAlive}
	if row.Status != nil {
		st := int(*row.Status)
		rec.Status = &st
	}
	return rec, nil
}

// Renew extends r's lock on its record by LockFor; it does nothing when
// the record is no longer r's.
func (s *Store) Renew(ctx context.Context, r Request) error {
	_, err := s.q.RenewIdempotentRequest(ctx, s.pool, dbq.RenewIdempotentRequestParams{
		TokenID: r.TokenID, Key: r.Key, Owner: &r.Owner, LockSeconds: LockFor.Seconds(), Now: s.clock.Now(),
	})
	return db.Translate(err)
}

// Finish stores r's answer (etag: its ETag header, "" for none); it does
// nothing when the record is no longer r's.
func (s *Store) Finish(ctx context.Context, r Request, status int, contentType, etag string, body []byte) error {
	st := int32(status)
	var tag *string
	if etag != "" {
		tag = &etag
	}
	return db.Translate(s.q.FinishIdempotentRequest(ctx, s.pool, dbq.FinishIdempotentRequestParams{
		TokenID: r.TokenID, Key: r.Key, Owner: &r.Owner,
		Status: &st, ContentType: &contentType, Response: body, Etag: tag, Now: s.clock.Now(),
	}))
}

// Forget deletes the record of r when its request took no effect, so a
// retry runs it again; a record whose request took effect is unlocked
// instead, so a retry learns at once that the outcome is unknown.
func (s *Store) Forget(ctx context.Context, r Request) error {
	n, err := s.q.AbandonIdempotentRequest(ctx, s.pool, dbq.AbandonIdempotentRequestParams{
		TokenID: r.TokenID, Key: r.Key, Owner: &r.Owner,
	})
	if err == nil && n == 0 {
		err = s.q.ReleaseIdempotentRequest(ctx, s.pool, dbq.ReleaseIdempotentRequestParams{
			TokenID: r.TokenID, Key: r.Key, Owner: &r.Owner, Now: s.clock.Now(),
		})
	}
	return db.Translate(err)
}

// DeleteExpired deletes the records past their TTL and returns how many.
func (s *Store) DeleteExpired(ctx context.Context) (int64, error) {
	n, err := s.q.DeleteExpiredIdempotencyKeys(ctx, s.pool, s.clock.Now())
	return n, db.Translate(err)
}
