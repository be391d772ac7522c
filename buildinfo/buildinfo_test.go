package buildinfo_test

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/buildinfo"
)

func TestFromBuildInfo(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261201100000-4f2c9a1b7d3e+dirty"},
			Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "4f2c9a1b7d3e5f60718293a4b5c6d7e8f9012345"},
				{Key: "vcs.time", Value: "2026-12-01T10:00:00Z"},
				{Key: "vcs.modified", Value: "true"},
			}}
		got := buildinfo.FromBuildInfo(bi, buildinfo.Stamp{Version: "v0.3.0-4-g4f2c9a1", BuildDate: "2026-12-01T10:05:00Z"})
		want := buildinfo.Info{Version: "v0.3.0-4-g4f2c9a1", Commit: "4f2c9a1b7d3e5f60718293a4b5c6d7e8f9012345", Modified: true,
			CommitDate: "2026-12-01T10:00:00Z", BuildDate: "2026-12-01T10:05:00Z", GoVersion: "go1.26.8", Platform: got.Platform}
		if got != want {
			t.Fatalf("got %+v, want %+v", got, want)
		}
		if s := got.Short(); s != "v0.3.0-4-g4f2c9a1 (4f2c9a1b7d3e, modified)" {
			t.Errorf("Short() = %q", s)
		}
		for _, part := range []string{"workgraph v0.3.0-4-g4f2c9a1", "4f2c9a1b7d3e5f60718293a4b5c6d7e8f9012345 (modified work tree)", "built:      2026-12-01T10:05:00Z", "go1.26.8"} {
			if !strings.Contains(got.String(), part) {
				t.Errorf("String() = %q, lacks %q", got.String(), part)
			}
		}
	})
	t.Run("ModuleVersionAndCommitDate", func(t *testing.T) {
		t.Parallel()
		bi := &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"},
			Settings: []debug.BuildSetting{{Key: "vcs.time", Value: "2026-11-30T09:00:00Z"}}}
		got := buildinfo.FromBuildInfo(bi, buildinfo.Stamp{})
		if got.Version != "v1.2.3" || got.BuildDate != "2026-11-30T09:00:00Z" || got.Commit != "unknown" {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("LinkerStampOnly", func(t *testing.T) {
		t.Parallel()
		got := buildinfo.FromBuildInfo(&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			buildinfo.Stamp{Version: "bf572cc-dirty", Commit: "bf572cce1eaea77fc7607d83bed592ab61e49c46", Modified: true, BuildDate: "2026-12-01T10:20:00Z"})
		if got.Version != "bf572cc-dirty" || got.Commit != "bf572cce1eaea77fc7607d83bed592ab61e49c46" || !got.Modified || got.BuildDate != "2026-12-01T10:20:00Z" {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("NoBuildInfo", func(t *testing.T) {
		t.Parallel()
		got := buildinfo.FromBuildInfo(&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, buildinfo.Stamp{})
		if got.Version != "devel" || got.Commit != "unknown" || got.BuildDate != "unknown" || got.GoVersion == "" {
			t.Fatalf("got %+v", got)
		}
		if got := buildinfo.FromBuildInfo(nil, buildinfo.Stamp{}); got.Version != "devel" {
			t.Fatalf("nil build info: got %+v", got)
		}
	})
}
