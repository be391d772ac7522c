package cli

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// busyAddr is an address something listens on for the test's life: a
// serve given it fails at once, before any database is started.
func busyAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.Addr().String()
}

// TestServeEnvMalformed: a serve environment variable whose value cannot
// be read (a duration without its unit, a number in words, a bool that is
// neither true nor false) is refused at start, naming the variable, as a
// malformed flag is: the server used to start with the built-in default
// after one line on stderr, so WORKGRAPH_STATEMENT_TIMEOUT=30 ran with
// 10s and WORKGRAPH_WEBHOOKS_OFF=TRUE delivered webhooks.
func TestServeEnvMalformed(t *testing.T) {
	for _, tc := range []struct{ env, value string }{
		{"WORKGRAPH_STATEMENT_TIMEOUT", "30"},
		{"WORKGRAPH_MAX_CONNS", "ten"},
		{"WORKGRAPH_UNAUTHENTICATED_RATE", "five"},
		{"WORKGRAPH_EVENTS_RETENTION", "30 days"},
		{"WORKGRAPH_WEBHOOKS_OFF", "maybe"},
		{"WORKGRAPH_METRICS_ON_MAIN", "enabled"},
		{"WORKGRAPH_TRUSTED_PROXIES", "10.0.0.0/33"},
		{"WORKGRAPH_TRUSTED_PROXIES", "10.0.0.1, proxy.example.com"},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(tc.env, tc.value)
			var out, errb strings.Builder
			code := Main([]string{"serve", "--addr", busyAddr(t), "--data-dir", t.TempDir()}, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
			if code != ExitUsage || !strings.Contains(errb.String(), tc.env) {
				t.Fatalf("%s=%q: exit %d, stderr %q; want %d naming the variable", tc.env, tc.value, code, errb.String(), ExitUsage)
			}
		})
	}
	t.Run("FlagGiven", func(t *testing.T) {
		// The flag wins over the variable, so the variable is not read.
		t.Setenv("WORKGRAPH_MAX_CONNS", "ten")
		var out, errb strings.Builder
		code := Main([]string{"serve", "--max-conns", "4", "--addr", busyAddr(t), "--data-dir", t.TempDir()}, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
		if code == ExitUsage || strings.Contains(errb.String(), "WORKGRAPH_MAX_CONNS") {
			t.Fatalf("exit %d, stderr %q: the variable was judged though --max-conns was given", code, errb.String())
		}
	})
}

// TestServeTrustedProxies: the trusted proxies are read from
// WORKGRAPH_TRUSTED_PROXIES or --trusted-proxies (the flag winning), each
// entry an address or a range; a list with an entry that is neither
// refuses to start (exit 2), naming the flag and the entry, before
// anything is started.
func TestServeTrustedProxies(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		t.Setenv("WORKGRAPH_TRUSTED_PROXIES", " 10.0.0.0/8, 192.0.2.7 ")
		cmd := newServeCmd(IO{In: strings.NewReader(""), Out: &strings.Builder{}, Err: &strings.Builder{}})
		if got := cmd.Flags().Lookup("trusted-proxies").Value.String(); got != "10.0.0.0/8,192.0.2.7/32" {
			t.Fatalf("trusted-proxies from the variable = %q, want 10.0.0.0/8,192.0.2.7/32", got)
		}
		if err := cmd.Flags().Parse([]string{"--trusted-proxies", "fd00::/8"}); err != nil {
			t.Fatal(err)
		}
		if got := cmd.Flags().Lookup("trusted-proxies").Value.String(); got != "fd00::/8" {
			t.Fatalf("trusted-proxies with the flag given = %q, want the flag's fd00::/8", got)
		}
	})
	t.Run("DefaultNone", func(t *testing.T) {
		t.Setenv("WORKGRAPH_TRUSTED_PROXIES", "")
		cmd := newServeCmd(IO{In: strings.NewReader(""), Out: &strings.Builder{}, Err: &strings.Builder{}})
		if got := cmd.Flags().Lookup("trusted-proxies").Value.String(); got != "" {
			t.Fatalf("trusted-proxies by default = %q, want none", got)
		}
	})
	t.Run("ErrFlagMalformed", func(t *testing.T) {
		var out, errb strings.Builder
		code := Main([]string{"serve", "--trusted-proxies", "10.0.0.0/8,10.0.0.300", "--addr", busyAddr(t), "--data-dir", t.TempDir()},
			IO{In: strings.NewReader(""), Out: &out, Err: &errb})
		if code != ExitUsage || !strings.Contains(errb.String(), "trusted-proxies") || !strings.Contains(errb.String(), "10.0.0.300") {
			t.Fatalf("exit %d, stderr %q; want %d naming --trusted-proxies and the entry", code, errb.String(), ExitUsage)
		}
	})
	t.Run("ErrEnvMalformed", func(t *testing.T) {
		t.Setenv("WORKGRAPH_TRUSTED_PROXIES", "10.0.0.0/8,,192.0.2.7")
		var out, errb strings.Builder
		code := Main([]string{"serve", "--addr", busyAddr(t), "--data-dir", t.TempDir()}, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
		if code != ExitUsage || !strings.Contains(errb.String(), "WORKGRAPH_TRUSTED_PROXIES") || !strings.Contains(errb.String(), "empty entry") {
			t.Fatalf("exit %d, stderr %q; want %d naming the variable and the empty entry", code, errb.String(), ExitUsage)
		}
	})
}

// TestServeEnvBool: a serve bool variable reads as strconv.ParseBool reads
// (1, t, true, TRUE, True; 0, f, false, ...) and yes/no, on/off: TRUE and
// on used to read as false.
func TestServeEnvBool(t *testing.T) {
	for value, want := range map[string]string{"TRUE": "true", "True": "true", "on": "true", "yes": "true", "1": "true", "false": "false", "off": "false", "0": "false"} {
		t.Run(value, func(t *testing.T) {
			t.Setenv("WORKGRAPH_METRICS_ON_MAIN", value)
			t.Setenv("WORKGRAPH_WEBHOOKS_OFF", value)
			cmd := newServeCmd(IO{In: strings.NewReader(""), Out: &strings.Builder{}, Err: &strings.Builder{}})
			for _, name := range []string{"metrics-on-main", "webhooks-off"} {
				if got := cmd.Flags().Lookup(name).Value.String(); got != want {
					t.Errorf("%s with %q in its variable: %s, want %s", name, value, got, want)
				}
			}
		})
	}
}

// TestEnvWarningsOnlyForServe: another command (an agent's `workgraph
// claim`, `workgraph version`) says nothing of serve's variables, which
// it does not read.
func TestEnvWarningsOnlyForServe(t *testing.T) {
	t.Setenv("WORKGRAPH_MAX_CONNS", "ten")
	t.Setenv("WORKGRAPH_LEASE_MAX", "1d")
	// The process's own stderr too: the variables were judged (and
	// reported there) while the commands were made, before one ran.
	stderr := os.Stderr
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	os.Stderr = f
	var out, errb strings.Builder
	code := Main([]string{"version"}, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	os.Stderr = stderr
	f.Close()
	raw, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 || errb.Len() != 0 || len(raw) != 0 {
		t.Fatalf("version: exit %d, stderr %q%s; want 0 and nothing on stderr", code, errb.String(), raw)
	}
}

// TestServeHelpOneDefault: each flag of `serve --help` states its default
// once (the retentions used to say it in their text and again, in
// another form, in pflag's "(default ...)").
func TestServeHelpOneDefault(t *testing.T) {
	cmd := newServeCmd(IO{In: strings.NewReader(""), Out: &strings.Builder{}, Err: &strings.Builder{}})
	for _, line := range strings.Split(cmd.Flags().FlagUsages(), "\n") {
		if strings.Count(line, "(default") > 1 {
			t.Errorf("a flag states its default twice: %s", strings.TrimSpace(line))
		}
	}
}

// TestServeJSONStartError: with --log-format json, a server that cannot
// start (here: its address is busy) says why in one JSON line at error, as
// every other line it writes, not as a plain "workgraph: ..." text line in
// the JSON stream; and exits non-zero.
func TestServeJSONStartError(t *testing.T) {
	t.Parallel()
	addr := busyAddr(t)
	var out, errb strings.Builder
	code := Main([]string{"serve", "--addr", addr, "--database-url", "postgres://unused.invalid/x", "--log-format", "json"},
		IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	if code == ExitOK {
		t.Fatalf("serve on a busy address exited 0:\n%s", errb.String())
	}
	var found bool
	for _, line := range strings.Split(strings.TrimRight(errb.String(), "\n"), "\n") {
		var obj map[string]any
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Errorf("a line that is not a JSON object: %q", line)
			continue
		}
		if e, _ := obj["err"].(string); obj["level"] == "ERROR" && strings.Contains(e, "address already in use") {
			found = true
		}
	}
	if !found {
		t.Errorf("no error line names the busy address:\n%s", errb.String())
	}
}

// TestServeAddrMalformed: a listen address no listener can take for its
// form is a usage error (exit 2) naming the flag or its variable, refused
// before anything starts (no data directory is made). It used to exit 1
// from the bind, as a failure of the server.
func TestServeAddrMalformed(t *testing.T) {
	for _, tc := range []struct{ name, flag, env, value string }{
		{"PortOutOfRange", "--addr", "", ":99999"},
		{"NoPort", "--addr", "", "127.0.0.1"},
		{"PortNotANumber", "--addr", "", "127.0.0.1:eighty"},
		{"MetricsAddr", "--metrics-addr", "", "127.0.0.1:70000"},
		{"PprofAddr", "--pprof-addr", "", "localhost"},
		{"FromVariable", "", "WORKGRAPH_ADDR", ":123456"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			argv := []string{"serve", "--data-dir", dir}
			want := tc.flag
			if tc.env != "" {
				t.Setenv(tc.env, tc.value)
				want = tc.env
			} else {
				argv = append(argv, tc.flag, tc.value)
			}
			if tc.flag == "--metrics-addr" || tc.flag == "--pprof-addr" {
				argv = append(argv, "--addr", busyAddr(t))
			}
			var out, errb strings.Builder
			code := Main(argv, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
			if code != ExitUsage || !strings.Contains(errb.String(), want+` "`+tc.value+`"`) {
				t.Fatalf("serve %s: exit %d, stderr %q; want %d naming %s", strings.Join(argv[1:], " "), code, errb.String(), ExitUsage, want)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Fatalf("the data directory was made (%v): something started before the address was checked", err)
			}
		})
	}
}

// TestServeBodyMemoryBounds: --body-memory-mib (or its variable) below 0
// or above 1 TiB is a usage error naming the flag, before anything is
// started: a number of MiB too large for a count of bytes used to wrap
// round and start a server with the default budget or an arbitrary one.
func TestServeBodyMemoryBounds(t *testing.T) {
	for _, value := range []string{"-1", "1048577", "9000000000000"} {
		t.Run(value, func(t *testing.T) {
			var out, errb strings.Builder
			code := Main([]string{"serve", "--body-memory-mib", value, "--addr", busyAddr(t), "--data-dir", t.TempDir()},
				IO{In: strings.NewReader(""), Out: &out, Err: &errb})
			if code != ExitUsage || !strings.Contains(errb.String(), "--body-memory-mib") {
				t.Fatalf("--body-memory-mib %s: exit %d, stderr %q; want %d naming the flag", value, code, errb.String(), ExitUsage)
			}
		})
	}
	t.Run("Env", func(t *testing.T) {
		t.Setenv("WORKGRAPH_BODY_MEMORY_MIB", "9000000000000")
		var out, errb strings.Builder
		code := Main([]string{"serve", "--addr", busyAddr(t), "--data-dir", t.TempDir()}, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
		if code != ExitUsage || !strings.Contains(errb.String(), "body-memory-mib") {
			t.Fatalf("exit %d, stderr %q; want %d naming the setting", code, errb.String(), ExitUsage)
		}
	})
}
