package auth

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/db"
)

// maxVerified bounds the tokens a Service remembers as verified; past it
// the memory is emptied and refilled by the next requests.
const maxVerified = 10000

// verifiedToken is what a full verification read of a token, kept to skip
// the lookup of its next requests: none of it changes while the token
// lives (the service never updates a token but to revoke it).
type verifiedToken struct {
	hash      []byte
	principal Principal
}

// verified is the memory of tokens that passed Authenticate, by id, and
// the id of each by its secret's hash: a bootstrap token's bearer string
// is any secret, with no id in it (parseBearer), so it is found by hash.
type verified struct {
	mu     sync.Mutex
	m      map[uuid.UUID]verifiedToken
	byHash map[string]uuid.UUID
}

func (v *verified) get(id uuid.UUID) (verifiedToken, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	t, ok := v.m[id]
	return t, ok
}

// idOf is the id of the token remembered with this secret hash.
func (v *verified) idOf(hash []byte) (uuid.UUID, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	id, ok := v.byHash[string(hash)]
	return id, ok
}

func (v *verified) put(t verifiedToken) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil || len(v.m) >= maxVerified {
		v.m = make(map[uuid.UUID]verifiedToken)
		v.byHash = make(map[string]uuid.UUID)
	}
	if old, ok := v.m[t.principal.TokenID]; ok {
		delete(v.byHash, string(old.hash))
	}
	v.m[t.principal.TokenID] = t
	v.byHash[string(t.hash)] = t.principal.TokenID
}

func (v *verified) drop(id uuid.UUID) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if t, ok := v.m[id]; ok {
		delete(v.byHash, string(t.hash))
	}
	delete(v.m, id)
}

// dropHash forgets the token remembered with this secret hash, if any.
func (v *verified) dropHash(hash []byte) {
	if id, ok := v.idOf(hash); ok {
		v.drop(id)
	}
}

// Lazy returns the principal of a bearer string that Authenticate verified
// before, without reading the token, and ctx carrying the check that it is
// still valid (a db.Precheck: the token exists, unrevoked, with the same
// secret, name, role and project). The check rides with the request's
// first statement on a db.Carrier, so the request's writes commit only
// with a valid token, and a revocation committed anywhere refuses the
// very next request; a request that sent no statement must run it
// (Precheck.Run) before it answers. ok is false when the bearer string is
// not one remembered (unknown, malformed, another secret): verify it with
// Authenticate. A refused check (db.PrecheckRefused, unauthenticated) is
// to be followed by Forget and Authenticate, which tell why.
func (s *Service) Lazy(ctx context.Context, bearer string) (Principal, context.Context, bool) {
	t, ok := s.remembered(bearer)
	if !ok {
		return Principal{}, ctx, false
	}
	p := t.principal
	check := db.NewPrecheck(stillValidSQL, p.TokenID, t.hash, p.Name, string(p.Role), p.ProjectID)
	return p, db.WithPrecheck(ctx, check), true
}

// Remembers reports whether bearer is a token Authenticate verified
// before on this service and has not forgotten (revoked here, refused by
// Lazy's check): a look at memory, no statement. A caller that refuses
// an address's unknown tokens (Throttle) lets these through, so that
// guesses from an address cannot lock out the tokens it is known to hold;
// they are still checked as any (Authenticate or Lazy).
func (s *Service) Remembers(bearer string) bool {
	_, ok := s.remembered(bearer)
	return ok
}

// remembered is what the memory holds of bearer, when its secret matches.
func (s *Service) remembered(bearer string) (verifiedToken, bool) {
	hash := hashBearer(bearer)
	id, ok := parseBearer(bearer)
	if !ok {
		// A bootstrap token: no id in the bearer string.
		if id, ok = s.verified.idOf(hash); !ok {
			return verifiedToken{}, false
		}
	}
	t, ok := s.verified.get(id)
	if !ok || !sameHash(t.hash, hash) {
		return verifiedToken{}, false
	}
	return t, true
}

// stillValidSQL checks that a token still exists, unrevoked, with the
// secret hash, name, role and project it was verified with (raising WG006
// unauthenticated when not).
const stillValidSQL = "SELECT token_still_valid($1, $2, $3, $4, $5)"

// Rechecking returns ctx carrying, for a request that waits and then acts
// (a long-poll claim), the check that p's token, presented as bearer, is
// still valid, for each attempt after the first to carry in its own
// statement (db.Rearm): a token revoked while the request waited is
// refused (unauthenticated) by the attempt that would have acted, which
// then changes nothing.
func (s *Service) Rechecking(ctx context.Context, p Principal, bearer string) context.Context {
	return db.WithRecheck(ctx, stillValidSQL, p.TokenID, hashBearer(bearer), p.Name, string(p.Role), p.ProjectID)
}

// Forget drops what Lazy remembers of a token (its check was refused).
func (s *Service) Forget(id uuid.UUID) { s.verified.drop(id) }

// Confirm returns the verdict of the check ctx carries (from Lazy),
// judging it alone when no statement of the request carried it: nil when
// it passed or ctx carries none, else the refusal (unauthenticated, see
// Refused) or the failure to judge it (unavailable).
func (s *Service) Confirm(ctx context.Context) error {
	p := db.PrecheckFrom(ctx)
	if p == nil {
		return nil
	}
	return p.Run(ctx, s.pool)
}

// Refused reports whether err is the refusal of Lazy's check.
func Refused(err error) bool { return db.PrecheckRefusal(err) == "unauthenticated" }

// Throttled reports whether a request from addr bearing bearer is refused
// for the address's failed authentications (t), and when to try again. A
// bearer this replica verified before (Remembers) is never refused:
// anonymous traffic from an address a worker or a person shares (a NAT, a
// proxy that is not trusted) must not lock them out, while guesses are
// still refused before any token is looked up. The memory is read only
// when the address is throttled, so an unthrottled request pays the
// throttle's map lookup alone.
func (s *Service) Throttled(t *Throttle, addr, bearer string) (retryAfter time.Duration, blocked bool) {
	wait, blocked := t.Blocked(addr)
	if !blocked || s.Remembers(bearer) {
		return 0, false
	}
	return wait, true
}
