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
		if got.Attention.ContinuityWindow != 3*time.Minute || got.MaxFailures != 7 {
			t.Fatalf("environment not applied: %+v", got)
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
		if cfg.Lease.Attention.ContinuityWindow != 30*time.Second {
			t.Fatalf("continuity window %v, want 30s", cfg.Lease.Attention.ContinuityWindow)
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
