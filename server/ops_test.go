package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/workgraph-dev/workgraph/buildinfo"
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
