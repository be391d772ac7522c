package cli

import (
	"slices"
	"testing"

	"github.com/workgraph-dev/workgraph/client"
)

// TestCommandEnvCarriesTheConnection: the command `work` runs reaches the
// server as the supervisor does, whichever source set each setting (a
// flag is not inherited through the environment): its URL, token,
// project, worker label and retry count.
func TestCommandEnvCarriesTheConnection(t *testing.T) {
	t.Parallel()
	sv := &supervisor{
		s:   &session{cfg: &clientConfig{URL: "http://wg.example:8080", Token: "wg_secret", Project: "site", Retries: 0}},
		opt: workOptions{worker: "laptop-1"},
	}
	cl := &client.Claim{Item: client.Item{ID: "item-1", Title: "t"}, Lease: client.Lease{ID: "lease-1", Epoch: 2}}
	env := sv.commandEnv(cl, t.TempDir())
	for _, want := range []string{
		"WORKGRAPH_URL=http://wg.example:8080", "WORKGRAPH_TOKEN=wg_secret", "WORKGRAPH_PROJECT=site",
		"WORKGRAPH_WORKER=laptop-1", "WORKGRAPH_RETRIES=0",
	} {
		if !slices.Contains(env, want) {
			t.Errorf("the command's environment lacks %s: %q", want, env)
		}
	}
}
