package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/workgraph-dev/workgraph/client"
)

// DefaultURL is the server a client command talks to when nothing else is
// configured (the address `workgraph serve` listens on by default).
const DefaultURL = "http://127.0.0.1:8080"

// fileConfig is the config file (~/.config/workgraph/config.yaml or
// config.json): the same settings as the flags and WORKGRAPH_* variables.
type fileConfig struct {
	URL     string `yaml:"url" json:"url"`
	Token   string `yaml:"token" json:"token"`
	Project string `yaml:"project" json:"project"`
	Worker  string `yaml:"worker" json:"worker"`
	Retries string `yaml:"retries" json:"retries"`
}

// clientConfig is the effective configuration of a client command.
// Precedence: flags > environment > config file > defaults. Source records
// where each setting came from (for `workgraph config`).
type clientConfig struct {
	URL, Token, Project, Worker string
	// Retries is how many times a request that failed for a reason
	// waiting may cure (the server unreachable, unavailable or rate
	// limiting) is tried again; 0: never.
	Retries int
	// File is the config file that was read, if any.
	File   string
	Source map[string]string
}

// clientFlags are the flags every client command takes.
type clientFlags struct {
	url, token, project, config string
	// retries is --retries as given ("" when not), read by loadConfig
	// with the other sources.
	retries string
	json    bool
}

// retriesFlag is --retries: kept as given, so that loadConfig can tell
// "not given" from 0 and refuse a bad count naming its source.
type retriesFlag struct{ s *string }

func (f retriesFlag) String() string     { return *f.s }
func (f retriesFlag) Set(v string) error { *f.s = v; return nil }
func (retriesFlag) Type() string         { return "int" }

// DefaultRetries is how many times a client command tries a request
// again when nothing sets --retries: the API client's own policy.
// MaxRetries bounds the setting: the client's retry budget ends the
// retries well before (client.DefaultRetryFor).
const (
	DefaultRetries = client.DefaultAttempts - 1
	MaxRetries     = 1000
)

// addClientFlags registers the connection flags and --json on cmd
// (persistent, so subcommands inherit them).
func addClientFlags(cmd *cobra.Command, f *clientFlags) {
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.url, "url", "", "server URL (env WORKGRAPH_URL; default "+DefaultURL+")")
	pf.StringVar(&f.token, "token", "", "API token (env WORKGRAPH_TOKEN)")
	pf.StringVarP(&f.project, "project", "p", "", "project name (env WORKGRAPH_PROJECT; default \"default\")")
	pf.StringVar(&f.config, "config", "", "config file (env WORKGRAPH_CONFIG; default ~/.config/workgraph/config.yaml or .json)")
	addRetriesFlag(pf, &f.retries)
	pf.BoolVar(&f.json, "json", false, "print JSON instead of tables")
}

// addRetriesFlag registers --retries on fs, kept as given in *p.
func addRetriesFlag(fs *pflag.FlagSet, p *string) {
	fs.Var(retriesFlag{p}, "retries", fmt.Sprintf("times a request is tried again while the server is unreachable, unavailable or rate limiting, "+
		"within %s of backoff (env WORKGRAPH_RETRIES; default %d; 0: never)", client.DefaultRetryFor, DefaultRetries))
}

// getenv is the environment lookup used by config loading (tests replace
// it through loadConfig's argument).
type getenv func(string) string

// loadConfig resolves the configuration from flags, the environment and the
// config file.
func loadConfig(f clientFlags, env getenv) (*clientConfig, error) {
	cfg := &clientConfig{Source: map[string]string{}}
	path, explicit := f.config, f.config != ""
	if path == "" {
		if path = env("WORKGRAPH_CONFIG"); path != "" {
			explicit = true
		}
	}
	if path == "" {
		path = defaultConfigFile(env)
	}
	var file fileConfig
	if path != "" {
		data, err := os.ReadFile(path)
		switch {
		case err == nil:
			if file, err = parseConfigFile(path, data); err != nil {
				return nil, err
			}
			cfg.File = path
		case explicit || !errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("config file: %w", err)
		}
	}
	pick := func(name, flag, envName, fromFile, def string) string {
		switch {
		case flag != "":
			cfg.Source[name] = "flag --" + name
			return flag
		case env(envName) != "":
			cfg.Source[name] = "env " + envName
			return env(envName)
		case fromFile != "":
			cfg.Source[name] = "file " + cfg.File
			return fromFile
		}
		cfg.Source[name] = "default"
		return def
	}
	cfg.URL = pick("url", f.url, "WORKGRAPH_URL", file.URL, DefaultURL)
	cfg.Token = pick("token", f.token, "WORKGRAPH_TOKEN", file.Token, "")
	cfg.Project = pick("project", f.project, "WORKGRAPH_PROJECT", file.Project, "default")
	cfg.Worker = pick("worker", "", "WORKGRAPH_WORKER", file.Worker, defaultWorker())
	retries := pick("retries", f.retries, "WORKGRAPH_RETRIES", file.Retries, strconv.Itoa(DefaultRetries))
	n, err := strconv.Atoi(retries)
	if err != nil || n < 0 || n > MaxRetries {
		return nil, fmt.Errorf("%s: %q is not a whole number of retries from 0 to %d", cfg.Source["retries"], retries, MaxRetries)
	}
	cfg.Retries = n
	return cfg, nil
}

// defaultConfigFile is $XDG_CONFIG_HOME/workgraph/config.{yaml,yml,json}
// (XDG_CONFIG_HOME defaults to ~/.config): the first that exists, else the
// .yaml name.
func defaultConfigFile(env getenv) string {
	dir := env("XDG_CONFIG_HOME")
	if dir == "" {
		home := env("HOME")
		if home == "" {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	dir = filepath.Join(dir, "workgraph")
	for _, name := range []string{"config.yaml", "config.yml", "config.json"} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return filepath.Join(dir, "config.yaml")
}

// parseConfigFile reads YAML or JSON (JSON is YAML); unknown settings are
// refused so that a typo does not silently fall back to a default. A .json
// file must be JSON: YAML would take what JSON refuses (a trailing comma,
// comments), and another JSON reader of the same file would not.
func parseConfigFile(path string, data []byte) (fileConfig, error) {
	var fc fileConfig
	if strings.HasSuffix(strings.ToLower(path), ".json") {
		if perr := checkJSON(planText(data)); perr != nil {
			if perr.Line == 0 {
				return fc, fmt.Errorf("config file %s: %s", path, perr.Msg)
			}
			return fc, fmt.Errorf("config file %s:%d: %s", path, perr.Line, perr.Msg)
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&fc); err != nil && !errors.Is(err, io.EOF) {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			lines := make([]string, 0, len(te.Errors))
			for _, e := range te.Errors {
				if m := unknownSettingRE.FindStringSubmatch(e); m != nil {
					lines = append(lines, fmt.Sprintf("%s:%s: unknown setting %q (%s)", path, m[1], m[2], knownSettings))
				} else {
					lines = append(lines, fmt.Sprintf("%s: %s (%s)", path, e, knownSettings))
				}
			}
			return fc, fmt.Errorf("config file %s", strings.Join(lines, "\n  "))
		}
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		return fc, fmt.Errorf("config file %s: %s (%s)", path, msg, knownSettings)
	}
	return fc, nil
}

const knownSettings = "known settings: url, token, project, worker, retries"

// unknownSettingRE reads the YAML decoder's refusal of an unknown field.
var unknownSettingRE = regexp.MustCompile(`^line (\d+): field (.+) not found in type \S+$`)

// defaultWorker is the worker label used when none is configured: the host
// name, so that the continuity preference after an attention request finds
// the same machine again.
func defaultWorker() string {
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "worker"
}

// newClient builds the API client of cfg, with stdio's client options
// last. It tries a request again cfg.Retries times at most (the server or
// its database unavailable, the server unreachable or rate limiting), and
// tells each retry on stdio.Err.
func (cfg *clientConfig) newClient(stdio IO) (*client.Client, error) {
	stderr := stdio.Err
	if cfg.Token == "" {
		return nil, &exitError{code: ExitAuth, err: errors.New("no API token: pass --token, set WORKGRAPH_TOKEN, or put `token: ...` in " + configHint(cfg))}
	}
	notify := func(r client.Retry) {
		wait := r.Wait.Round(time.Millisecond)
		if client.Unreachable(r.Err) {
			fmt.Fprintf(stderr, "workgraph: cannot reach the server at %s (%s); retrying in %s\n", cfg.URL, transportReason(r.Err), wait)
			return
		}
		if errors.Is(r.Err, client.ErrStreamEnded) {
			fmt.Fprintf(stderr, "workgraph: the server at %s ended the event stream (a restart?); reconnecting in %s\n", cfg.URL, wait)
			return
		}
		fmt.Fprintf(stderr, "workgraph: %s %s: %v; retrying in %s\n", r.Method, r.Path, r.Err, wait)
	}
	opts := append([]client.Option{client.WithUserAgent("workgraph-cli"), client.WithRetryNotify(notify),
		client.WithRetries(cfg.Retries + 1), client.WithAbsentServerBudget(absentServerBudget)}, stdio.clientOptions...)
	c, err := client.New(cfg.URL, cfg.Token, opts...)
	if err != nil {
		return nil, &exitError{code: ExitUsage, err: err}
	}
	return c, nil
}

// absentServerBudget is how long a command waits for a server that is not
// there (connection refused, unknown host) before it says so: long enough
// for a server started a moment ago to bind its address, short enough that
// a wrong URL or a server not started is told at once. A server that has
// answered once is waited for the client's whole retry budget (a restart).
const absentServerBudget = time.Second

// transportReason is why a request did not reach the server, in the words
// of the innermost error ("connection refused", "no such host", "i/o
// timeout"): the wrappers around it repeat the request's method, path and
// URL, which the messages around it say once.
func transportReason(err error) string {
	for {
		inner := errors.Unwrap(err)
		if inner == nil {
			return err.Error()
		}
		err = inner
	}
}

func configHint(cfg *clientConfig) string {
	if cfg.File != "" {
		return cfg.File
	}
	return "~/.config/workgraph/config.yaml"
}
