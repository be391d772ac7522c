package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/workgraph-dev/workgraph/server"
)

func TestPolicyFlags(t *testing.T) {
	t.Setenv("WORKGRAPH_CONTINUITY_WINDOW", "3m")
	t.Setenv("WORKGRAPH_MAX_FAILURES", "7")
	t.Setenv("WORKGRAPH_LEASE_MAX", "not-a-duration")

	t.Run("EnvThenFlags", func(t *testing.T) {
		var cfg server.Config
		f := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		addPolicyFlags(f, &cfg)
		if err := f.Parse([]string{"--lease-default", "2m", "--max-expiries", "5", "--statement-timeout", "4s", "--unauthenticated-rate", "0.5"}); err != nil {
			t.Fatal(err)
		}
		got := cfg.Lease
		if cfg.Attention.ContinuityWindow != 3*time.Minute || got.MaxFailures != 7 {
			t.Fatalf("environment not applied: %+v, %+v", got, cfg.Attention)
		}
		if got.DefaultTTL != 2*time.Minute || got.MaxExpiries != 5 {
			t.Fatalf("flags not applied: %+v", got)
		}
		if cfg.StatementTimeout != 4*time.Second || cfg.UnauthenticatedRate != 0.5 {
			t.Fatalf("limit flags not applied: statement timeout %v, unauthenticated rate %v", cfg.StatementTimeout, cfg.UnauthenticatedRate)
		}
		if got.MaxTTL != 0 {
			t.Fatalf("a malformed environment value was used: %v", got.MaxTTL)
		}
	})
	t.Run("FlagBeatsEnv", func(t *testing.T) {
		var cfg server.Config
		f := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		addPolicyFlags(f, &cfg)
		if err := f.Parse([]string{"--continuity-window", "30s"}); err != nil {
			t.Fatal(err)
		}
		if cfg.Attention.ContinuityWindow != 30*time.Second {
			t.Fatalf("continuity window %v, want 30s", cfg.Attention.ContinuityWindow)
		}
	})
}

func TestServeLogLevel(t *testing.T) {
	t.Parallel()
	var out, errb strings.Builder
	code := Main([]string{"serve", "--log-level", "loud"}, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	if code != ExitUsage || !strings.Contains(errb.String(), "--log-level") {
		t.Fatalf("exit %d, stderr %q; want %d naming --log-level", code, errb.String(), ExitUsage)
	}
}

// TestServeLogFormat: an unknown --log-format is refused before anything
// starts, naming the flag.
func TestServeLogFormat(t *testing.T) {
	t.Parallel()
	var out, errb strings.Builder
	code := Main([]string{"serve", "--log-format", "xml"}, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	if code != ExitUsage || !strings.Contains(errb.String(), "--log-format") {
		t.Fatalf("exit %d, stderr %q; want %d naming --log-format", code, errb.String(), ExitUsage)
	}
}

func TestEventsRetentionFlag(t *testing.T) {
	parse := func(t *testing.T, args ...string) (time.Duration, error) {
		t.Helper()
		var cfg server.Config
		f := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		addPolicyFlags(f, &cfg)
		err := f.Parse(args)
		return cfg.EventsRetention, err
	}
	t.Run("DefaultIsTheServersDefault", func(t *testing.T) {
		if d, err := parse(t); err != nil || d != 0 {
			t.Fatalf("no flag: %v, %v; want 0 (the server's 30 days)", d, err)
		}
	})
	t.Run("ZeroKeepsForever", func(t *testing.T) {
		if d, err := parse(t, "--events-retention", "0"); err != nil || d >= 0 {
			t.Fatalf("--events-retention 0: %v, %v; want negative (forever)", d, err)
		}
	})
	t.Run("Duration", func(t *testing.T) {
		if d, err := parse(t, "--events-retention", "48h"); err != nil || d != 48*time.Hour {
			t.Fatalf("--events-retention 48h: %v, %v", d, err)
		}
	})
	t.Run("Env", func(t *testing.T) {
		t.Setenv("WORKGRAPH_EVENTS_RETENTION", "72h")
		if d, err := parse(t); err != nil || d != 72*time.Hour {
			t.Fatalf("env 72h: %v, %v", d, err)
		}
	})
	t.Run("ErrNegative", func(t *testing.T) {
		if _, err := parse(t, "--events-retention", "-1h"); err == nil {
			t.Fatal("a negative retention was accepted")
		}
	})
}

func TestDeliveryRetentionFlag(t *testing.T) {
	parse := func(t *testing.T, args ...string) (time.Duration, error) {
		t.Helper()
		var cfg server.Config
		f := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		addPolicyFlags(f, &cfg)
		err := f.Parse(args)
		return cfg.Webhooks.DeliveryRetention, err
	}
	t.Run("DefaultIsTheEventsRetention", func(t *testing.T) {
		if d, err := parse(t, "--events-retention", "48h"); err != nil || d != 0 {
			t.Fatalf("no flag: %v, %v; want 0 (the events' retention)", d, err)
		}
	})
	t.Run("ZeroKeepsForever", func(t *testing.T) {
		if d, err := parse(t, "--webhooks-delivery-retention", "0"); err != nil || d >= 0 {
			t.Fatalf("--webhooks-delivery-retention 0: %v, %v; want negative (forever)", d, err)
		}
	})
	t.Run("Duration", func(t *testing.T) {
		if d, err := parse(t, "--webhooks-delivery-retention", "168h"); err != nil || d != 168*time.Hour {
			t.Fatalf("--webhooks-delivery-retention 168h: %v, %v", d, err)
		}
	})
	t.Run("Env", func(t *testing.T) {
		t.Setenv("WORKGRAPH_WEBHOOKS_DELIVERY_RETENTION", "72h")
		if d, err := parse(t); err != nil || d != 72*time.Hour {
			t.Fatalf("env 72h: %v, %v", d, err)
		}
	})
}

// TestEventsStreamFlags: the follower's interval and the streams'
// heartbeat and stall timeout reach the server's configuration, from the
// flags or the environment.
func TestEventsStreamFlags(t *testing.T) {
	t.Setenv("WORKGRAPH_EVENTS_HEARTBEAT", "5s")
	t.Setenv("WORKGRAPH_EVENTS_STALL", "2m")
	var cfg server.Config
	f := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	addPolicyFlags(f, &cfg)
	if err := f.Parse([]string{"--events-follow-interval", "100ms"}); err != nil {
		t.Fatal(err)
	}
	if cfg.EventsFollowInterval != 100*time.Millisecond || cfg.EventsHeartbeat != 5*time.Second {
		t.Fatalf("follow interval %s, heartbeat %s; want 100ms and 5s", cfg.EventsFollowInterval, cfg.EventsHeartbeat)
	}
	if cfg.EventsStall != 2*time.Minute {
		t.Fatalf("stall %s, want 2m", cfg.EventsStall)
	}
}
