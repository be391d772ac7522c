package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/client"
)

func envOf(m map[string]string) getenv { return func(k string) string { return m[k] } }

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dir := filepath.Join(home, ".config", "workgraph")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(file, []byte("url: http://file:1\ntoken: file-token\nproject: file-project\nworker: file-worker\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("OKFileOnly", func(t *testing.T) {
		t.Parallel()
		cfg, err := loadConfig(clientFlags{}, envOf(map[string]string{"HOME": home}))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.URL != "http://file:1" || cfg.Token != "file-token" || cfg.Project != "file-project" || cfg.Worker != "file-worker" || cfg.File != file {
			t.Fatalf("cfg = %+v", cfg)
		}
	})
	t.Run("OKEnvOverFile", func(t *testing.T) {
		t.Parallel()
		cfg, err := loadConfig(clientFlags{}, envOf(map[string]string{
			"HOME": home, "WORKGRAPH_URL": "http://env:2", "WORKGRAPH_PROJECT": "env-project",
		}))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.URL != "http://env:2" || cfg.Project != "env-project" || cfg.Token != "file-token" {
			t.Fatalf("cfg = %+v", cfg)
		}
		if cfg.Source["url"] != "env WORKGRAPH_URL" || !strings.HasPrefix(cfg.Source["token"], "file ") {
			t.Fatalf("sources = %v", cfg.Source)
		}
	})
	t.Run("OKFlagsOverEnv", func(t *testing.T) {
		t.Parallel()
		cfg, err := loadConfig(clientFlags{url: "http://flag:3", token: "flag-token"}, envOf(map[string]string{
			"HOME": home, "WORKGRAPH_URL": "http://env:2", "WORKGRAPH_TOKEN": "env-token",
		}))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.URL != "http://flag:3" || cfg.Token != "flag-token" || cfg.Project != "file-project" || cfg.Source["url"] != "flag --url" {
			t.Fatalf("cfg = %+v", cfg)
		}
	})
	t.Run("OKDefaults", func(t *testing.T) {
		t.Parallel()
		cfg, err := loadConfig(clientFlags{}, envOf(map[string]string{"HOME": t.TempDir()}))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.URL != DefaultURL || cfg.Project != "default" || cfg.Token != "" || cfg.File != "" || cfg.Worker == "" {
			t.Fatalf("cfg = %+v", cfg)
		}
	})
	t.Run("OKJSONFileFromEnv", func(t *testing.T) {
		t.Parallel()
		p := filepath.Join(t.TempDir(), "wg.json")
		os.WriteFile(p, []byte(`{"url": "http://json:4", "project": "j"}`), 0o600)
		cfg, err := loadConfig(clientFlags{}, envOf(map[string]string{"HOME": home, "WORKGRAPH_CONFIG": p}))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.URL != "http://json:4" || cfg.Project != "j" || cfg.Token != "" {
			t.Fatalf("cfg = %+v", cfg)
		}
	})
	t.Run("ErrUnknownSetting", func(t *testing.T) {
		t.Parallel()
		p := filepath.Join(t.TempDir(), "bad.yaml")
		os.WriteFile(p, []byte("url: http://x\ntokne: oops\n"), 0o600)
		_, err := loadConfig(clientFlags{config: p}, envOf(map[string]string{"HOME": home}))
		if err == nil || !strings.Contains(err.Error(), p+`:2: unknown setting "tokne"`) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("ErrJSONFileNotJSON", func(t *testing.T) {
		t.Parallel()
		// A .json config must be JSON, as a .json plan must: a trailing
		// comma was read (as YAML) without a word.
		p := filepath.Join(t.TempDir(), "wg.json")
		os.WriteFile(p, []byte("{\n  \"url\": \"http://json:4\",\n}\n"), 0o600)
		_, err := loadConfig(clientFlags{config: p}, envOf(map[string]string{"HOME": home}))
		if err == nil || !strings.Contains(err.Error(), p+":3: column 1: JSON syntax") {
			t.Fatalf("err = %v, want the file's line and column and JSON syntax", err)
		}
	})
	t.Run("OKRetries", func(t *testing.T) {
		t.Parallel()
		// Each source in turn: the default (the client's ten attempts, so
		// nine retries), the file, the environment over it, the flag over
		// both.
		p := filepath.Join(t.TempDir(), "retries.yaml")
		if err := os.WriteFile(p, []byte("retries: 4\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			flags  clientFlags
			env    map[string]string
			want   int
			source string
		}{
			{clientFlags{}, map[string]string{"HOME": t.TempDir()}, client.DefaultAttempts - 1, "default"},
			{clientFlags{config: p}, nil, 4, "file " + p},
			{clientFlags{config: p}, map[string]string{"WORKGRAPH_RETRIES": "0"}, 0, "env WORKGRAPH_RETRIES"},
			{clientFlags{config: p, retries: "2"}, map[string]string{"WORKGRAPH_RETRIES": "0"}, 2, "flag --retries"},
		} {
			cfg, err := loadConfig(c.flags, envOf(c.env))
			if err != nil {
				t.Fatalf("%+v %v: %v", c.flags, c.env, err)
			}
			if cfg.Retries != c.want || cfg.Source["retries"] != c.source {
				t.Errorf("%+v %v: retries %d from %q, want %d from %q", c.flags, c.env, cfg.Retries, cfg.Source["retries"], c.want, c.source)
			}
		}
	})
	t.Run("ErrRetries", func(t *testing.T) {
		t.Parallel()
		// A count that is not a whole number from 0 to MaxRetries is
		// refused, naming where it came from, instead of falling back to a
		// default (or, past the largest int, wrapping round to none).
		p := filepath.Join(t.TempDir(), "retries.yaml")
		if err := os.WriteFile(p, []byte("retries: lots\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			flags clientFlags
			env   map[string]string
			want  string
		}{
			{clientFlags{retries: "-1"}, nil, `flag --retries: "-1" is not`},
			{clientFlags{retries: "1.5"}, nil, `flag --retries: "1.5" is not`},
			{clientFlags{retries: "1001"}, nil, `flag --retries: "1001" is not`},
			{clientFlags{retries: "9223372036854775807"}, nil, `flag --retries: "9223372036854775807" is not`},
			{clientFlags{}, map[string]string{"HOME": t.TempDir(), "WORKGRAPH_RETRIES": "three"}, `env WORKGRAPH_RETRIES: "three" is not`},
			{clientFlags{config: p}, nil, `file ` + p + `: "lots" is not`},
		} {
			_, err := loadConfig(c.flags, envOf(c.env))
			if err == nil || !strings.Contains(err.Error(), "retries") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%+v %v: err = %v, want it to contain %q", c.flags, c.env, err, c.want)
			}
		}
	})
	t.Run("ErrMissingExplicitFile", func(t *testing.T) {
		t.Parallel()
		_, err := loadConfig(clientFlags{config: filepath.Join(home, "nope.yaml")}, envOf(map[string]string{"HOME": home}))
		if err == nil {
			t.Fatal("a missing --config file was accepted")
		}
	})
}

func TestExplainExitCodes(t *testing.T) {
	t.Parallel()
	cfg := &clientConfig{URL: "http://127.0.0.1:1", Project: "p", Source: map[string]string{"url": "default", "token": "env WORKGRAPH_TOKEN", "project": "default"}}
	problem := func(code string, status int) error {
		return fmt.Errorf("wrapped: %w", &client.Error{Status: status, Code: code, Detail: "detail of " + code})
	}
	cases := []struct {
		name string
		err  error
		code int
		hint string
	}{
		{"NothingReady", client.ErrNothingReady, ExitNothing, "--wait"},
		{"LeaseLost", problem(client.CodeLeaseLost, 409), ExitLeaseLost, "stop working on this item and claim again"},
		// A lease id and an epoch of different claims is the caller's
		// input, refused without a change: the lease may be live and the
		// caller's, so not the lease-lost exit, which says to stop.
		{"LeaseLostEpochMismatch", fmt.Errorf("wrapped: %w", &client.Error{Status: 409, Code: client.CodeLeaseLost,
			Detail: "lease l was not granted at this epoch", Extensions: map[string]json.RawMessage{"epoch": json.RawMessage(`7`)}}),
			ExitUsage, "Pass the epoch the lease's claim printed"},
		{"NotFound", problem(client.CodeNotFound, 404), ExitNotFound, `project (now "p"`},
		{"Cycle", problem(client.CodeDependencyCycle, 409), ExitConflict, "cycle"},
		{"ConflictingResult", problem(client.CodeConflictingResult, 409), ExitConflict, "first result stands"},
		{"DepthLimit", problem(client.CodeDepthLimit, 409), ExitConflict, "--max-depth"},
		{"NoMatch", problem(client.CodeNoMatch, 409), ExitConflict, "waiting will not help"},
		{"TooManyOpenRequests", problem(client.CodeTooManyOpenRequests, 409), ExitConflict, "until a person answers one"},
		{"EventsPruned", fmt.Errorf("wrapped: %w", &client.Error{Status: 410, Code: client.CodeEventsPruned, Detail: "gone",
			Extensions: map[string]json.RawMessage{"pruned_through": json.RawMessage("5210")}}), ExitConflict, "--after 5210"},
		{"Unauthenticated", problem(client.CodeUnauthenticated, 401), ExitAuth, "env WORKGRAPH_TOKEN"},
		{"Forbidden", problem(client.CodeForbidden, 403), ExitAuth, "human or admin token"},
		// A human token refused (GET /v1/events of `events --all`) is
		// told of an admin token, not of the human token it holds.
		{"ForbiddenToHuman", fmt.Errorf("wrapped: %w", &client.Error{Status: 403, Code: client.CodeForbidden,
			Detail: "a human token may not GET /v1/events"}), ExitAuth, "needs an admin token"},
		// A human token refused a project or token command is not told
		// that a human token may do it.
		{"ForbiddenAdminOnly", problem(client.CodeForbidden, 403), ExitAuth, "projects and tokens are admin-only"},
		// A conflict of state is refused again on retry; a stale
		// --version is the one a retry mends.
		{"ConflictState", problem(client.CodeConflict, 409), ExitConflict, "refuses the same request again"},
		{"ConflictVersion", fmt.Errorf("wrapped: %w", &client.Error{Status: 409, Code: client.CodeConflict, Detail: "the item changed meanwhile",
			Extensions: map[string]json.RawMessage{"field": json.RawMessage(`"version"`)}}), ExitConflict, "retry against its new version"},
		{"ConflictOwnHint", withHint(problem(client.CodeConflict, 409), client.CodeConflict, "nothing to cancel"), ExitConflict, "nothing to cancel"},
		{"VersionConflictKeepsRetry", withHint(fmt.Errorf("wrapped: %w", &client.Error{Status: 409, Code: client.CodeConflict,
			Extensions: map[string]json.RawMessage{"field": json.RawMessage(`"version"`)}}), client.CodeConflict, "nothing to cancel"), ExitConflict, "retry against its new version"},
		{"Invalid", problem(client.CodeInvalidArgument, 400), ExitUsage, "fix the input"},
		{"HeaderTooLarge", problem(client.CodeHeaderTooLarge, 431), ExitUsage, "256 KiB"},
		{"RateLimited", problem(client.CodeRateLimited, 429), ExitUnavailable, "slow down"},
		{"Internal", problem(client.CodeInternal, 500), ExitError, "server's log"},
		{"Unreachable", &url.Error{Op: "Post", URL: "http://127.0.0.1:1/v1", Err: errors.New("connection refused")}, ExitUnavailable, "workgraph serve"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := explain(c.err, cfg)
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != c.code {
				t.Fatalf("explain(%v) = %v, want exit code %d", c.err, err, c.code)
			}
			if !strings.Contains(err.Error(), c.hint) {
				t.Fatalf("message %q lacks the hint %q", err.Error(), c.hint)
			}
		})
	}
}

// TestExplainRateLimitedBlamesNoToken: rate_limited has causes besides
// the token's request rate (a replica reading as many request bodies as it
// may at once, an address's failed sign-ins), and the server's detail says
// which: the hint under it must not tell a worker refused for the body
// budget that its token sent too many requests.
func TestExplainRateLimitedBlamesNoToken(t *testing.T) {
	t.Parallel()
	cfg := &clientConfig{URL: "http://127.0.0.1:1", Project: "p", Source: map[string]string{"url": "default", "token": "env WORKGRAPH_TOKEN", "project": "default"}}
	err := explain(fmt.Errorf("wrapped: %w", &client.Error{Status: 429, Code: client.CodeRateLimited,
		Detail: "too many request bodies are being read on this replica (at most 64 MiB (67108864 bytes) at once); retry after 1 s"}), cfg)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != ExitUnavailable {
		t.Fatalf("explain = %v, want exit code %d", err, ExitUnavailable)
	}
	if msg := err.Error(); strings.Contains(msg, "this token") || !strings.Contains(msg, "retry") {
		t.Fatalf("message %q: want a hint to retry that blames no token", msg)
	}
}

func TestMainExitCodes(t *testing.T) {
	t.Parallel()
	run := func(args ...string) (int, string) {
		var out, errb strings.Builder
		code := Main(args, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
		return code, errb.String()
	}
	t.Run("ErrUnknownFlag", func(t *testing.T) {
		t.Parallel()
		if code, _ := run("claim", "--no-such-flag"); code != ExitUsage {
			t.Fatalf("exit = %d, want %d", code, ExitUsage)
		}
	})
	t.Run("ErrUnknownFlagSaysWhatIsKnown", func(t *testing.T) {
		t.Parallel()
		// A misspelt flag names the flags it may have meant and where the
		// command's flags are listed, as a misspelt command does.
		for _, c := range []struct {
			args []string
			want []string
		}{
			{[]string{"items", "ls", "--stat", "ready"}, []string{"unknown flag: --stat", "Did you mean this?\n\t--state", "Run 'workgraph items ls --help' for its flags"}},
			{[]string{"import", "plan.yaml", "--dryrun"}, []string{"unknown flag: --dryrun", "--dry-run", "Run 'workgraph import --help' for its flags"}},
			{[]string{"claim", "--no-such-flag"}, []string{"unknown flag: --no-such-flag", "Run 'workgraph claim --help' for its flags"}},
			{[]string{"items", "ls", "-Z"}, []string{"unknown shorthand flag: 'Z' in -Z", "Run 'workgraph items ls --help' for its flags"}},
		} {
			code, msg := run(c.args...)
			if code != ExitUsage {
				t.Errorf("%q: exit = %d, want %d", c.args, code, ExitUsage)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q: the message lacks %q:\n%s", c.args, w, msg)
				}
			}
		}
		if _, msg := run("claim", "--no-such-flag"); strings.Contains(msg, "Did you mean") {
			t.Errorf("a flag near no other got a suggestion:\n%s", msg)
		}
	})
	t.Run("ErrArgumentsSayWhatIsWanted", func(t *testing.T) {
		t.Parallel()
		// A missing or extra argument names what the command takes, from
		// its usage line, not cobra's "accepts 1 arg(s), received 0".
		for _, c := range []struct {
			args []string
			want []string
		}{
			{[]string{"items", "show"}, []string{"workgraph: items show: missing ID", "usage: workgraph items show ID", "`workgraph items show --help`"}},
			{[]string{"items", "show", "a", "b"}, []string{"workgraph: items show: takes 1 argument (ID), got 2", "usage: workgraph items show ID"}},
			{[]string{"items", "ls", "extra"}, []string{"workgraph: items ls: takes no arguments, got 1", "usage: workgraph items ls"}},
		} {
			code, msg := run(c.args...)
			if code != ExitUsage {
				t.Errorf("%q: exit = %d, want %d", c.args, code, ExitUsage)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q: the message lacks %q:\n%s", c.args, w, msg)
				}
			}
			if strings.Contains(msg, "arg(s)") {
				t.Errorf("%q: cobra's wording is still there:\n%s", c.args, msg)
			}
		}
	})
	t.Run("ErrUnknownSubcommand", func(t *testing.T) {
		t.Parallel()
		// A typo under a command group used to print the group's help and
		// exit 0, so a script went on as if it had run.
		for _, args := range [][]string{{"items", "frobnicate"}, {"item", "sho", "c53ea1bd"}, {"plan", "imprt", "x.yaml"}, {"itms", "ls"}} {
			code, msg := run(args...)
			if code != ExitUsage || !strings.Contains(msg, "unknown command") {
				t.Errorf("%q: exit = %d (%s), want %d and unknown command", args, code, msg, ExitUsage)
			}
		}
		if code, msg := run("item", "sho", "x"); !strings.Contains(msg, "Did you mean") || !strings.Contains(msg, "show") {
			t.Errorf("no suggestion: exit %d (%s)", code, msg)
		}
		// The group alone still shows its help.
		var out strings.Builder
		if code := Main([]string{"items"}, IO{In: strings.NewReader(""), Out: &out, Err: io.Discard}); code != ExitOK || !strings.Contains(out.String(), "Available Commands") {
			t.Errorf("items: exit = %d (%s)", code, out.String())
		}
	})
	t.Run("ErrNegativeDuration", func(t *testing.T) {
		t.Parallel()
		// Refused before any request: the server would take a negative
		// lease or wait as "not given" and use its default instead.
		for _, args := range [][]string{
			{"claim", "--lease", "-5m"},
			{"claim", "--wait", "-1s"},
			{"work", "--grace", "-1s", "--", "true"},
			{"work", "--lease", "-5m", "--", "true"},
			{"heartbeat", "--extend", "-10m", "--lease-id", "0196aaaa-0000-7000-8000-000000000000", "--epoch", "1"},
		} {
			code, msg := run(append(args, "--token", "x", "--url", "http://127.0.0.1:1")...)
			if code != ExitUsage || !strings.Contains(msg, "must not be negative") {
				t.Errorf("%q: exit = %d (%s), want %d and must not be negative", args, code, msg, ExitUsage)
			}
		}
	})
	t.Run("ErrFlagValueSaysWhatIsWanted", func(t *testing.T) {
		t.Parallel()
		// A value a flag cannot take says what it wants, not the parser's
		// words (strconv.ParseInt, "time: missing unit").
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"items", "add", "t", "--priority", "high"}, `--priority "high": want a whole number, e.g. --priority 5`},
			{[]string{"claim", "--wait", "5"}, `--wait "5": want a duration with its unit, e.g. --wait 30s`},
			{[]string{"work", "--lease", "ten", "--", "true"}, `--lease "ten": want a duration with its unit`},
		} {
			code, msg := run(c.args...)
			if code != ExitUsage || !strings.Contains(msg, c.want) || !strings.Contains(msg, "--help' for its flags") {
				t.Errorf("%q: exit = %d, want %d and %q:\n%s", c.args, code, ExitUsage, c.want, msg)
			}
			if strings.Contains(msg, "strconv.") || strings.Contains(msg, "time: ") {
				t.Errorf("%q: the parser's words are still there:\n%s", c.args, msg)
			}
		}
	})
	t.Run("ErrNegativeLimit", func(t *testing.T) {
		t.Parallel()
		// Refused before any request: a negative page size was taken as
		// "not given", and a default page came back without a word.
		for _, args := range [][]string{{"items", "ls", "--limit", "-5"}, {"history", "--limit=-1"}, {"workers", "--limit", "-2"}} {
			code, msg := run(append(args, "--token", "x", "--url", "http://127.0.0.1:1")...)
			if code != ExitUsage || !strings.Contains(msg, "a page size must not be negative") {
				t.Errorf("%q: exit = %d (%s), want %d naming --limit", args, code, msg, ExitUsage)
			}
		}
	})
	t.Run("ErrNegativeAfter", func(t *testing.T) {
		t.Parallel()
		// Refused before any request: the client sends no after of 0 or
		// less, so the whole log was printed (or streamed) from the start.
		for _, args := range [][]string{{"events", "--after", "-3"}, {"events", "--after=-1", "--all"}} {
			code, msg := run(append(args, "--token", "x", "--url", "http://127.0.0.1:1")...)
			if code != ExitUsage || !strings.Contains(msg, "--after -") {
				t.Errorf("%q: exit = %d (%s), want %d naming --after", args, code, msg, ExitUsage)
			}
		}
	})
	t.Run("WorkHelpListsItsExitCodes", func(t *testing.T) {
		t.Parallel()
		// The statuses work exits with, as docs/agents.md's table has them.
		var out strings.Builder
		Main([]string{"work", "--help"}, IO{In: strings.NewReader(""), Out: &out, Err: io.Discard})
		help := strings.Join(strings.Fields(out.String()), " ")
		for _, want := range []string{"0 done", "1 the command failed", "2 bad arguments or the command cannot be started",
			"3 nothing was ready", "4 the lease was lost", "6 no ready item matches --capabilities", "7 the token was refused",
			"8 the server could not be reached", "130 interrupted"} {
			if !strings.Contains(help, want) {
				t.Errorf("work --help lacks the exit status %q", want)
			}
		}
	})
	t.Run("ErrMissingArgs", func(t *testing.T) {
		t.Parallel()
		if code, _ := run("deps", "add", "only-one", "--token", "x"); code != ExitUsage {
			t.Fatalf("exit = %d, want %d", code, ExitUsage)
		}
	})
	t.Run("ErrNoLease", func(t *testing.T) {
		t.Parallel()
		code, msg := run("complete", "--token", "x", "--lease-id", "", "--epoch", "")
		if code != ExitUsage || !strings.Contains(msg, "workgraph work") {
			t.Fatalf("exit = %d (%s)", code, msg)
		}
	})
	t.Run("ErrNoToken", func(t *testing.T) {
		t.Parallel()
		code, msg := run("items", "ls", "--config", filepath.Join(t.TempDir(), "none.yaml"))
		if code != ExitUsage && code != ExitAuth {
			t.Fatalf("exit = %d (%s)", code, msg)
		}
	})
	t.Run("ErrUnreachable", func(t *testing.T) {
		t.Parallel()
		// Two attempts, not the client's default ten (about 11 s of
		// backoff): the CLI's answer after its retries is the same, and
		// the retry is still told on stderr.
		var out, errb strings.Builder
		code := Main([]string{"items", "ls", "--url", "http://127.0.0.1:1", "--token", "x"},
			IO{In: strings.NewReader(""), Out: &out, Err: &errb, clientOptions: []client.Option{client.WithRetries(2)}})
		msg := errb.String()
		if code != ExitUnavailable || !strings.Contains(msg, "cannot reach the server") {
			t.Fatalf("exit = %d (%s)", code, msg)
		}
		if !strings.Contains(msg, "retrying in") {
			t.Fatalf("the retry was not told on stderr: %s", msg)
		}
	})
	t.Run("StreamEndedReadable", func(t *testing.T) {
		t.Parallel()
		// A server that ends the stream (a restart) is told in one plain
		// line while events --follow reconnects, not as the request's
		// method and path twice over; here the reconnection is refused,
		// which ends the command.
		var n atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) > 1 {
				w.Header().Set("Content-Type", "application/problem+json")
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprint(w, `{"code": "unauthenticated", "status": 401, "title": "Unauthenticated", "detail": "revoked"}`)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "retry: 2000\n\nid: 1\nevent: item.created\ndata: {\"seq\": 1, \"type\": \"item.created\"}\n\n")
		}))
		defer srv.Close()
		var out, errb strings.Builder
		code := Main([]string{"events", "--follow", "--url", srv.URL, "--token", "x"},
			IO{In: strings.NewReader(""), Out: &out, Err: &errb})
		msg := errb.String()
		want := "workgraph: the server at " + srv.URL + " ended the event stream (a restart?); reconnecting in "
		if code != ExitAuth || !strings.Contains(msg, want) || strings.Contains(msg, "client: GET") {
			t.Fatalf("exit = %d, stderr:\n%s\nwant exit %d and %q", code, msg, ExitAuth, want)
		}
	})
	t.Run("ErrUnreachableReadable", func(t *testing.T) {
		t.Parallel()
		// A person who runs a command with no server up reads, per
		// retry and at the end, where the CLI looked, why it could not
		// get there and where that address came from: one line each,
		// not the request's method, path and whole URL three times over.
		var out, errb strings.Builder
		code := Main([]string{"items", "ls", "--url", "http://127.0.0.1:1", "--token", "x"},
			IO{In: strings.NewReader(""), Out: &out, Err: &errb, clientOptions: []client.Option{client.WithRetries(3)}})
		msg := errb.String()
		if code != ExitUnavailable {
			t.Fatalf("exit = %d (%s)", code, msg)
		}
		lines := strings.Split(strings.TrimRight(msg, "\n"), "\n")
		want := []string{
			"workgraph: cannot reach the server at http://127.0.0.1:1 (connection refused); retrying in ",
			"workgraph: cannot reach the server at http://127.0.0.1:1 (connection refused); retrying in ",
			"workgraph: cannot reach the server at http://127.0.0.1:1 (from flag --url): connection refused",
			"  is it running? start one with `workgraph serve`, or point --url / WORKGRAPH_URL at it",
		}
		if len(lines) != len(want) {
			t.Fatalf("stderr has %d lines, want %d:\n%s", len(lines), len(want), msg)
		}
		for i, w := range want {
			if !strings.HasPrefix(lines[i], w) {
				t.Errorf("line %d = %q, want it to start with %q", i+1, lines[i], w)
			}
		}
		if strings.Contains(msg, "client:") || strings.Contains(msg, `Get "`) || strings.Contains(msg, "/v1/") {
			t.Errorf("stderr repeats the request's internals:\n%s", msg)
		}
	})
}

// TestRetriesSetting: the retry count a person sets (--retries, the
// WORKGRAPH_RETRIES environment variable or `retries:` in the config file)
// is what the client does: a server that answers 503 gets the first
// attempt and that many retries, each told on stderr, and the command then
// gives up with the unavailable exit code; a bad count is a usage error
// that sends nothing.
func TestRetriesSetting(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) (*httptest.Server, *atomic.Int32) {
		var n atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"code": "unavailable", "status": 503, "title": "Service Unavailable", "detail": "the database is down"}`)
		}))
		t.Cleanup(srv.Close)
		return srv, &n
	}
	run := func(args ...string) (int, string) {
		var out, errb strings.Builder
		code := Main(args, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
		return code, errb.String()
	}
	for _, c := range []struct {
		name    string
		args    func(t *testing.T) []string
		retries int
	}{
		{"OKFlag", func(*testing.T) []string { return []string{"--retries", "2"} }, 2},
		{"OKFlagNone", func(*testing.T) []string { return []string{"--retries", "0"} }, 0},
		{"OKFile", func(t *testing.T) []string {
			p := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(p, []byte("retries: 1\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			return []string{"--config", p}
		}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv, n := setup(t)
			code, msg := run(append([]string{"items", "ls", "--url", srv.URL, "--token", "x"}, c.args(t)...)...)
			if code != ExitUnavailable || !strings.Contains(msg, "the database is down") {
				t.Fatalf("exit = %d, want %d (unavailable):\n%s", code, ExitUnavailable, msg)
			}
			if got := int(n.Load()); got != c.retries+1 {
				t.Errorf("the server got %d requests, want %d (the first and %d retries)", got, c.retries+1, c.retries)
			}
			if got := strings.Count(msg, "retrying in"); got != c.retries {
				t.Errorf("stderr tells %d retries, want %d:\n%s", got, c.retries, msg)
			}
		})
	}
	t.Run("ErrNegative", func(t *testing.T) {
		t.Parallel()
		srv, n := setup(t)
		code, msg := run("items", "ls", "--url", srv.URL, "--token", "x", "--retries", "-3")
		if code != ExitUsage || !strings.Contains(msg, "--retries") {
			t.Fatalf("exit = %d, want %d naming --retries:\n%s", code, ExitUsage, msg)
		}
		if got := n.Load(); got != 0 {
			t.Errorf("the server got %d requests after a refused setting", got)
		}
	})
}

// TestUsageArgs: the positional arguments read from usage lines, flags and
// their values left out.
func TestUsageArgs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		use             string
		required, names []string
		variadic        bool
	}{
		{"ls", nil, nil, false},
		{"show ID", []string{"ID"}, []string{"ID"}, false},
		{"resolve ID [ANSWER]", []string{"ID"}, []string{"ID", "[ANSWER]"}, false},
		{"create URL [--events TYPE,...] [--format standard|slack]", []string{"URL"}, []string{"URL"}, false},
		{"create [NAME] --role admin|human|agent [--project NAME|ID]", nil, []string{"[NAME]"}, false},
		{"work [flags] -- COMMAND [ARGS...]", []string{"COMMAND"}, []string{"COMMAND", "[ARGS...]"}, true},
		{"rotate ID [--grace 24h]", []string{"ID"}, []string{"ID"}, false},
	} {
		required, names, variadic := usageArgs(c.use)
		if !slices.Equal(required, c.required) || !slices.Equal(names, c.names) || variadic != c.variadic {
			t.Errorf("usageArgs(%q) = %q, %q, %v; want %q, %q, %v", c.use, required, names, variadic, c.required, c.names, c.variadic)
		}
	}
}

// TestUnreachableFailsFast: with nothing listening at the configured
// address (connection refused), a command gives up within a second or so,
// with the client's own retry policy (not one a test shortened), and says
// where it looked and how to start a server: a typo in the URL or a server
// not started is not a fault that waiting cures.
func TestUnreachableFailsFast(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now: connections are refused
	var out, errb strings.Builder
	start := time.Now()
	code := Main([]string{"items", "ls", "--url", addr, "--token", "x"}, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	took := time.Since(start)
	msg := errb.String()
	if code != ExitUnavailable || !strings.Contains(msg, "cannot reach the server at "+addr+" (from flag --url): connection refused") || !strings.Contains(msg, "workgraph serve") {
		t.Fatalf("exit = %d, stderr:\n%s", code, msg)
	}
	if took > 3*time.Second {
		t.Fatalf("gave up after %s, want about a second at most:\n%s", took, msg)
	}
}
