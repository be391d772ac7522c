package server_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/buildinfo"
	"github.com/workgraph-dev/workgraph/server"
)

// TestHealthzVersion: /healthz names the build that answers.
func TestHealthzVersion(t *testing.T) {
	t.Parallel()
	srv := start(t)
	resp, err := http.Get(srv.URL() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	bi := buildinfo.Get()
	for k, want := range map[string]any{"status": "ok", "version": bi.Version, "commit": bi.Commit, "build_date": bi.BuildDate, "modified": bi.Modified} {
		if raw[k] != want {
			t.Errorf("/healthz %s = %v, want %v (body %v)", k, raw[k], want, raw)
		}
	}
}

// TestFirstStartBlock: the first-start token is printed as a block of its
// own on FirstStartOut, and no log line carries it.
func TestFirstStartBlock(t *testing.T) {
	t.Parallel()
	var log, out syncBuffer
	srv := start(t, func(c *server.Config) {
		c.BootstrapToken = ""
		c.Logger = slog.New(slog.NewTextHandler(&log, nil))
		c.FirstStartOut = &out
	})
	block := out.String()
	var token string
	for _, f := range strings.Fields(block) {
		if strings.HasPrefix(f, "wg_") {
			token = f
		}
	}
	if token == "" || !strings.Contains(block, srv.URL()+"/") || !strings.Contains(block, "\n    "+token+"\n") {
		t.Fatalf("no token alone on its line, or no UI address, in the block:\n%s", block)
	}
	if strings.Contains(log.String(), token) {
		t.Fatalf("the token is in the log:\n%s", log.String())
	}
	if !strings.Contains(log.String(), "first start") {
		t.Fatalf("the log does not say a token was made:\n%s", log.String())
	}
	req, _ := http.NewRequest("GET", srv.URL()+"/v1/projects/default", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the printed token: %d", resp.StatusCode)
	}
}
