package lease

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// maxScopeRetries bounds how often one Claim retries after losing a race
// for a scope (errScopeRace).
const maxScopeRetries = 16

// errScopeRace: the item a claim took overlaps a scope that a concurrent
// claim granted first; the claim's transaction rolls back and it tries
// again (its next snapshot sees that lease, and the claim skips the item).
var errScopeRace = errors.New("lease: a concurrent claim took an overlapping scope")

// Scope locks: how both claim statements (ClaimItemDirect, and ClaimItem
// on the transactional path) make the grant of an item's scopes (the
// lease's Scopes, its item's touches) safe against concurrent claims; a
// lease without scopes takes none.
//
// Why a re-check under locks: the claim skips items whose touches overlap
// a live lease's scopes, but it judges by its statement's snapshot, and two
// claims that run at once each miss the other's new lease (FOR UPDATE SKIP
// LOCKED locks the two different items, not their scopes). So the grant
// takes transaction-scoped advisory locks such that two claims granting
// overlapping scopes always take conflicting locks: per resource, and per
// resource and first path segment. A scope whose first segment is a
// literal (no "*") overlaps another such scope only if their first
// segments are equal, so it takes its resource's lock shared and the
// (resource, segment) lock exclusive; any other scope (no path, or a first
// segment with "*" or "**") takes its resource's lock exclusive. Claims in
// different directories of one resource do not wait on each other. The
// locks are taken in the order of their numbers (two claims never wait on
// each other in a cycle, and a claim waits on no row while it holds them).
// Then a query of its own reads a fresh snapshot: every claim that held a
// conflicting lock before has committed (or rolled back), so its lease is
// visible. If one overlaps, this claim lost the race: WG002 (errScopeRace)
// rolls it back and it claims again. Both steps are the VOLATILE function
// wg_lock_scopes (migration 00041), whose queries each take a new snapshot
// under READ COMMITTED, called by the claiming statement before it writes
// the item; the lease is stamped after it, so a claim that waited for a
// lock never records an acquired_at from before it held its scopes. Of two
// overlapping grants, whichever locks second always sees the first; hence
// two live leases never hold overlapping scopes. A lease's scopes are freed
// when it ends or expires, since both tests count only live leases (not
// ended, expires_at in the future by the database clock).

// recordOffer stores the capabilities the worker offers (a worker offering
// none records nothing); RecordOffer writes only when they changed or the
// stored row is a minute old. A worker claiming in a loop offers the same
// set every time, so the service skips the statement (a round trip on
// every claim) when it recorded that set for that worker less than
// offerRefresh ago; the row then still moves about once a minute.
func (s *Service) recordOffer(ctx context.Context, q dbq.DBTX, project uuid.UUID, req ClaimRequest) error {
	if len(req.Capabilities) == 0 {
		return nil
	}
	key, set, at := offerKey{project, req.Worker}, strings.Join(req.Capabilities, "\x00"), s.offerTime()
	if s.offers.fresh(key, set, at) {
		return nil
	}
	err := dbq.New().RecordOffer(ctx, q, dbq.RecordOfferParams{
		ProjectID: project, Worker: req.Worker, Capabilities: req.Capabilities, Now: s.clock.Now(),
	})
	if err == nil {
		s.offers.remember(key, set, at)
	}
	return err
}

// offerTime is the instant the offer cache judges by: the stub clock in
// tests, else this process's clock (the cache is this replica's alone).
func (s *Service) offerTime() time.Time {
	if t := s.clock.Now(); t != nil {
		return *t
	}
	return clock.Local(nil).Read()
}

// offerRefresh is how long the service trusts an offer it recorded.
const offerRefresh = 30 * time.Second

// maxOffers bounds the offers the cache remembers; beyond it, it forgets
// them all (the next claim of each worker records again).
const maxOffers = 10_000

type offerKey struct {
	project uuid.UUID
	worker  string
}

type offerSeen struct {
	set string
	at  time.Time
}

// offerCache remembers the capability sets this service recorded, per
// project and worker label. Shared by the copies On makes.
type offerCache struct {
	mu   sync.Mutex
	seen map[offerKey]offerSeen
}

func (c *offerCache) fresh(k offerKey, set string, at time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.seen[k]
	return ok && o.set == set && !at.Before(o.at) && at.Sub(o.at) < offerRefresh
}

func (c *offerCache) remember(k offerKey, set string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil || len(c.seen) >= maxOffers {
		c.seen = make(map[offerKey]offerSeen)
	}
	c.seen[k] = offerSeen{set, at}
}

// noMatch is the no_match answer to a claim that found nothing, when the
// project has ready items but none whose requires the capabilities cover;
// nil otherwise. Its details name the capabilities the claim offered and
// (some of) those the ready items require beyond them: of the items that
// carry the claim's labels when there are such.
func (s *Service) noMatch(ctx context.Context, tx dbq.DBTX, project uuid.UUID, caps, labels []string) (*wgerr.Error, error) {
	q := dbq.New()
	h, err := q.ClaimHopeless(ctx, tx, dbq.ClaimHopelessParams{ProjectID: project, Capabilities: caps})
	if err != nil || !h.AnyReady || h.AnyMatch {
		return nil, err
	}
	missing, err := q.MissingCapabilities(ctx, tx, dbq.MissingCapabilitiesParams{ProjectID: project, Capabilities: caps, Labels: labels})
	if err != nil {
		return nil, err
	}
	return &wgerr.Error{
		Code: wgerr.CodeNoMatch,
		Message: fmt.Sprintf("no ready item can be handed to a worker with capabilities %v: every ready item "+
			"requires something else (%v); claim with more capabilities or change the items' requires", caps, missing),
		Details: map[string]any{"reason": "capabilities_unmatched", "capabilities": caps, "missing": missing},
	}, nil
}

// OfferWindow is how recently a worker must have offered a capability in a
// claim for UnofferedCapabilities to count it as offered.
const OfferWindow = 15 * time.Minute

// UnofferedCapabilities returns those of caps (an item's requires) that no
// worker offered in a claim within OfferWindow, nor offered in its last
// claim while it holds a live lease of the project (a worker busy for
// longer than the window claims again when done): an item requiring one
// of them waits for a worker that may never come.
func (s *Service) UnofferedCapabilities(ctx context.Context, project uuid.UUID, caps []string) ([]string, error) {
	if len(caps) == 0 {
		return nil, nil
	}
	return dbq.New().UnofferedCapabilities(ctx, s.exec, dbq.UnofferedCapabilitiesParams{
		ProjectID: project, Capabilities: caps, Now: s.clock.Now(), WindowMs: OfferWindow.Milliseconds(),
	})
}
