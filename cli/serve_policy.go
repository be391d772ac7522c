package cli

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/server"
)

// addPolicyFlags registers the lease and attention policy of `serve`. Each
// flag's default comes from its environment variable when that is set; 0
// keeps the built-in default named in the help text. Variables whose value
// could not be read are in bad.
func addPolicyFlags(f *pflag.FlagSet, cfg *server.Config) (bad envProblems) {
	bad = envProblems{}
	p := &cfg.Lease
	durationFlag(f, bad, &p.MinTTL, "lease-min", "WORKGRAPH_LEASE_MIN", "shortest lease a claim may ask for (0: 1s)")
	durationFlag(f, bad, &p.MaxTTL, "lease-max", "WORKGRAPH_LEASE_MAX", "longest lease a claim may ask for (0: 24h)")
	durationFlag(f, bad, &p.DefaultTTL, "lease-default", "WORKGRAPH_LEASE_DEFAULT", "lease length when a claim names none (0: 15m)")
	durationFlag(f, bad, &p.RetryBackoff, "retry-backoff", "WORKGRAPH_RETRY_BACKOFF", "wait after a first failure before the item may be claimed again, doubled after each further one (0: 30s)")
	durationFlag(f, bad, &p.MaxRetryBackoff, "max-retry-backoff", "WORKGRAPH_MAX_RETRY_BACKOFF", "cap of the retry backoff (0: 30m)")
	intFlag(f, bad, &p.MaxFailures, "max-failures", "WORKGRAPH_MAX_FAILURES", "consecutive failures after which a person is asked instead of retrying (0: 3)")
	intFlag(f, bad, &p.MaxExpiries, "max-expiries", "WORKGRAPH_MAX_EXPIRIES", "consecutive lease expiries after which a person is asked instead of handing the item out again (0: 3)")
	durationFlag(f, bad, &cfg.Attention.ContinuityWindow, "continuity-window", "WORKGRAPH_CONTINUITY_WINDOW", "after a person answers, how long only the worker that asked may claim the item (0: 10m)")
	intFlag(f, bad, &cfg.MaxActiveLeasesPerToken, "max-leases-per-token", "WORKGRAPH_MAX_LEASES_PER_TOKEN", "live leases one API token may hold (0: 1000, negative: unlimited)")
	durationFlag(f, bad, &cfg.SweepInterval, "sweep-interval", "WORKGRAPH_SWEEP_INTERVAL", "how often expired leases are ended in the background (0: 10s)")
	retentionFlag(f, bad, &cfg.EventsRetention, "events-retention", "WORKGRAPH_EVENTS_RETENTION", "720h0m0s, 30 days",
		"how long events are kept; 0 keeps them forever, else at least 24h")
	durationFlag(f, bad, &cfg.EventsFollowInterval, "events-follow-interval", "WORKGRAPH_EVENTS_FOLLOW_INTERVAL",
		"how often this replica looks for new events while a long poll or stream waits (0: 25ms)")
	durationFlag(f, bad, &cfg.EventsHeartbeat, "events-heartbeat", "WORKGRAPH_EVENTS_HEARTBEAT",
		"how often an idle event stream sends a comment, so proxies keep it open (0: 15s; at most 30s)")
	durationFlag(f, bad, &cfg.EventsStall, "events-stall", "WORKGRAPH_EVENTS_STALL",
		"how long a write to an event stream's reader may wait, its connection's buffers full, before the stream is dropped (0: two heartbeats)")
	retentionFlag(f, bad, &cfg.Webhooks.DeliveryRetention, "webhooks-delivery-retention", "WORKGRAPH_WEBHOOKS_DELIVERY_RETENTION", "--events-retention",
		"how long the records of finished webhook deliveries (delivered or failed) and their attempts are kept; 0 keeps them forever, else at least 24h")
	durationFlag(f, bad, &cfg.StatementTimeout, "statement-timeout", "WORKGRAPH_STATEMENT_TIMEOUT", "bound of every database statement of the server; longer ones are cancelled, 503 (0: 10s, negative: none)")
	floatFlag(f, bad, &cfg.UnauthenticatedRate, "unauthenticated-rate", "WORKGRAPH_UNAUTHENTICATED_RATE", "failed authentications (API requests without valid credentials, failed sign-ins) per second one client address may make before its requests get 429 (0: 5, bursts of 30; negative: unlimited)")
	proxiesFlag(f, bad, &cfg.TrustedProxies, "trusted-proxies", "WORKGRAPH_TRUSTED_PROXIES",
		"comma-separated IP addresses and CIDR ranges of the reverse proxies whose X-Forwarded-For names the client (for the limit of failed authentications per client address and the request log) and whose X-Forwarded-Proto: https makes the web UI's cookies Secure; empty: none, every request is its connection's peer")
	return bad
}

// envProblems are the serve variables whose values could not be read, by
// the name of their flag. A flag given on the command line wins over its
// variable, which is then not judged.
type envProblems map[string]error

// add records the malformed value of env, the variable of flag name.
func (p envProblems) add(name, env, value string, err error) {
	p[name] = fmt.Errorf("%s=%q: %w", env, value, err)
}

// check refuses (exit 2, naming each variable) when a variable could not
// be read and its flag was not given: the server would otherwise run with
// another value than the operator set.
func (p envProblems) check(f *pflag.FlagSet) error {
	var msgs []string
	for name, err := range p {
		if !f.Changed(name) {
			msgs = append(msgs, err.Error())
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	sort.Strings(msgs)
	return &exitError{code: ExitUsage, err: errors.New(strings.Join(msgs, "; "))}
}

// boolFlag registers a bool flag whose default is read from env: true,
// yes, on or any form strconv.ParseBool reads (1, t, TRUE, ...), and
// their opposites.
func boolFlag(f *pflag.FlagSet, bad envProblems, x *bool, name, env, usage string) {
	def := false
	if v := os.Getenv(env); v != "" {
		switch strings.ToLower(v) {
		case "yes", "on":
			def = true
		case "no", "off":
		default:
			parsed, err := strconv.ParseBool(v)
			if err != nil {
				bad.add(name, env, v, errors.New("not true or false"))
			}
			def = parsed
		}
	}
	f.BoolVar(x, name, def, usage+" (env "+env+")")
}

// floatFlag registers a number flag whose default is read from env; a
// malformed value is recorded in bad.
func floatFlag(f *pflag.FlagSet, bad envProblems, x *float64, name, env, usage string) {
	def := 0.0
	if v := os.Getenv(env); v != "" {
		parsed, err := strconv.ParseFloat(v, 64)
		if err != nil {
			bad.add(name, env, v, errors.New("not a number"))
		} else {
			def = parsed
		}
	}
	f.Float64Var(x, name, def, usage+" (env "+env+")")
}

// durationFlag registers a duration flag whose default is read from env;
// a malformed value is recorded in bad.
func durationFlag(f *pflag.FlagSet, bad envProblems, d *time.Duration, name, env, usage string) {
	def := time.Duration(0)
	if v := os.Getenv(env); v != "" {
		parsed, err := time.ParseDuration(v)
		if err != nil {
			bad.add(name, env, v, errors.New("not a duration (a number and a unit: 30s, 5m, 2h)"))
		} else {
			def = parsed
		}
	}
	f.DurationVar(d, name, def, usage+" (env "+env+")")
}

// intFlag registers an integer flag whose default is read from env; a
// malformed value is recorded in bad.
func intFlag(f *pflag.FlagSet, bad envProblems, n *int, name, env, usage string) {
	def := 0
	if v := os.Getenv(env); v != "" {
		parsed, err := strconv.Atoi(v)
		if err != nil {
			bad.add(name, env, v, errors.New("not a whole number"))
		} else {
			def = parsed
		}
	}
	f.IntVar(n, name, def, usage+" (env "+env+")")
}

// retentionFlag registers a retention flag read from env: 0 keeps
// forever (server.Config says that with a negative value), unset keeps
// the default the usage names (0 in server.Config); a malformed value is
// recorded in bad.
func retentionFlag(f *pflag.FlagSet, bad envProblems, d *time.Duration, name, env, def, usage string) {
	f.Var(&retentionValue{d: d, def: def}, name, usage+" (env "+env+")")
	if v := os.Getenv(env); v != "" {
		if err := (&retentionValue{d: d, def: def}).Set(v); err != nil {
			bad.add(name, env, v, err)
		}
	}
}

// retentionValue is the flag value of a retention: def is how the default
// (0) reads.
type retentionValue struct {
	d   *time.Duration
	def string
}

func (r *retentionValue) String() string {
	if r.d == nil || *r.d == 0 {
		return r.def
	}
	if *r.d < 0 {
		return "0s"
	}
	return r.d.String()
}

func (r *retentionValue) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	switch {
	case v == 0:
		*r.d = -1 // forever
	case v < 0:
		return fmt.Errorf("must not be negative")
	default:
		*r.d = v
	}
	return nil
}

func (r *retentionValue) Type() string { return "duration" }

// proxiesFlag registers the list of trusted proxies, read from env when
// set; a malformed value is recorded in bad (the flag's own value is
// refused by the flag parser).
func proxiesFlag(f *pflag.FlagSet, bad envProblems, p *auth.Proxies, name, env, usage string) {
	f.Var(proxiesValue{p}, name, usage+" (env "+env+")")
	if v := os.Getenv(env); v != "" {
		if err := (proxiesValue{p}).Set(v); err != nil {
			bad.add(name, env, v, err)
		}
	}
}

// proxiesValue is the flag value of a list of trusted proxies.
type proxiesValue struct{ p *auth.Proxies }

func (v proxiesValue) String() string {
	if v.p == nil {
		return ""
	}
	return v.p.String()
}

func (v proxiesValue) Set(s string) error {
	parsed, err := auth.ParseProxies(s)
	if err != nil {
		return err
	}
	*v.p = parsed
	return nil
}

func (v proxiesValue) Type() string { return "CIDRs" }
