package auth

import (
	"cmp"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/workgraph-dev/workgraph/clock"
)

// Defaults of NewThrottle: a person mistyping a token, or an agent retrying
// with a stale one, stays well inside them; a flood of guesses does not.
const (
	DefaultUnauthenticatedRate  = 5 // per second, per client address
	DefaultUnauthenticatedBurst = 30
)

// throttleMax bounds the addresses a Throttle tracks; beyond it, those whose
// bucket has refilled are forgotten, and if that is not enough, the tenth
// with the most tokens left (the least blocked: an address that floods
// stays blocked whatever other addresses do).
const throttleMax = 10_000

// throttleReport is how often at most a Throttle logs its summary.
const throttleReport = time.Minute

// Throttle limits, per client address, the requests that present no valid
// credentials (no token, a malformed, unknown or revoked one) and the
// failed sign-ins: each failure spends a token of the address's bucket,
// and while the bucket is empty every request from the address that needs
// credentials is refused before they are checked (so a flood of guesses
// costs the database nothing), but one whose token Service.Remembers:
// the callers ask that first, so guesses from an address cannot lock out
// the workers and people known to share it. Limits are per server
// replica.
//
// Failures and refusals are not logged one by one: the first is, and then
// a summary line (how many, from how many addresses) at most once a
// minute, when the next one happens.
type Throttle struct {
	limit rate.Limit
	burst int
	log   *slog.Logger
	// now is the process clock the buckets and the summary's pacing read
	// (SetClock); the database takes no part in throttling.
	now clock.Local

	mu      sync.Mutex
	m       map[string]*rate.Limiter
	failed  int
	refused int
	seen    map[string]struct{} // addresses counted since the last summary
	last    time.Time           // process clock: paces the summary only
}

// SetClock makes the throttle read c instead of the system clock (tests
// move it instead of sleeping). Call it before the throttle is used.
func (t *Throttle) SetClock(c clock.Local) { t.now = c }

// NewThrottle returns a throttle of perSecond sustained failures per
// address with bursts of burst. perSecond 0 means
// DefaultUnauthenticatedRate, negative no limit; burst 0 means
// DefaultUnauthenticatedBurst.
func NewThrottle(perSecond float64, burst int, log *slog.Logger) *Throttle {
	limit := rate.Limit(perSecond)
	switch {
	case perSecond == 0:
		limit = DefaultUnauthenticatedRate
	case perSecond < 0:
		limit = rate.Inf
	}
	if burst <= 0 {
		burst = DefaultUnauthenticatedBurst
	}
	if log == nil {
		log = slog.Default()
	}
	return &Throttle{limit: limit, burst: burst, log: log, m: make(map[string]*rate.Limiter), seen: make(map[string]struct{})}
}

// Blocked reports whether the address must be refused now, and when to try
// again (at least a second).
func (t *Throttle) Blocked(addr string) (retryAfter time.Duration, blocked bool) {
	if t == nil || t.limit == rate.Inf {
		return 0, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	lim, ok := t.m[addr]
	if !ok {
		return 0, false
	}
	tokens := lim.TokensAt(t.now.Read())
	if tokens >= 1 {
		return 0, false
	}
	t.refused++
	t.note(addr)
	wait := time.Duration(math.Ceil((1-tokens)/float64(t.limit))) * time.Second
	return max(wait, time.Second), true
}

// Fail records a failed authentication from the address.
func (t *Throttle) Fail(addr string) {
	if t == nil || t.limit == rate.Inf {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	lim, ok := t.m[addr]
	if !ok {
		if len(t.m) >= throttleMax {
			t.forgetIdle()
		}
		lim = rate.NewLimiter(t.limit, t.burst)
		t.m[addr] = lim
	}
	lim.AllowN(t.now.Read(), 1)
	t.failed++
	t.note(addr)
}

// forgetIdle drops the addresses whose bucket is full again, and when
// that leaves no room, the tenth of them with the most tokens left; called
// with t.mu held.
func (t *Throttle) forgetIdle() {
	now := t.now.Read()
	for a, lim := range t.m {
		if lim.TokensAt(now) >= float64(t.burst) {
			delete(t.m, a)
		}
	}
	if len(t.m) < throttleMax {
		return
	}
	type entry struct {
		addr   string
		tokens float64
	}
	all := make([]entry, 0, len(t.m))
	for a, lim := range t.m {
		all = append(all, entry{a, lim.TokensAt(now)})
	}
	slices.SortFunc(all, func(x, y entry) int { return cmp.Compare(y.tokens, x.tokens) })
	for _, e := range all[:len(all)/10] {
		delete(t.m, e.addr)
	}
}

// note counts addr for the summary and logs it when it is due; called with
// t.mu held.
func (t *Throttle) note(addr string) {
	if len(t.seen) < throttleMax {
		t.seen[addr] = struct{}{}
	}
	now := t.now.Read()
	if now.Sub(t.last) < throttleReport {
		return
	}
	t.log.Info("requests without valid credentials",
		"failed", t.failed, "refused", t.refused, "addresses", len(t.seen), "next_summary_after", throttleReport)
	t.failed, t.refused, t.last = 0, 0, now
	clear(t.seen)
}
