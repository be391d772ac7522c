// Package buildinfo says which build of workgraph is running: its version,
// the commit it was built from and when it was built, read from the Go
// build information (the vcs.* settings `go build -buildvcs=true` stamps)
// and from the values `make build` passes with -ldflags -X. A build with
// neither (`go run`, -buildvcs=false) reports "devel" and "unknown" rather
// than failing.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
)

// Set by `make build` through -ldflags "-X ...": the version (git
// describe), the commit, "true" when the work tree had changes, and the
// build date. Any may be empty. The vcs.* settings of the build
// information, where Go stamped them, take precedence for the commit (Go
// does not stamp them in a git worktree, whose .git is a file).
var (
	version   string
	commit    string
	modified  string
	buildDate string
)

// Info describes one build.
type Info struct {
	// Version is the release (a tag, or git describe's form of a commit
	// past one), the module version Go stamps, or "devel".
	Version string `json:"version"`
	// Commit is the full commit hash, or "unknown".
	Commit string `json:"commit"`
	// Modified reports a work tree with uncommitted changes at build time.
	Modified bool `json:"modified"`
	// CommitDate is the commit's time (RFC 3339), or "".
	CommitDate string `json:"commit_date,omitempty"`
	// BuildDate is when the binary was built (RFC 3339); when the build
	// did not say, the commit's time, else "unknown".
	BuildDate string `json:"build_date"`
	// GoVersion is the toolchain that built it; Platform is GOOS/GOARCH.
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

var (
	once sync.Once
	info Info
)

// Get is the running binary's build information.
func Get() Info {
	once.Do(func() {
		bi, _ := debug.ReadBuildInfo()
		info = FromBuildInfo(bi, Stamp{Version: version, Commit: commit, Modified: modified == "true", BuildDate: buildDate})
	})
	return info
}

// Stamp is what the build passed with -ldflags -X (zero fields: not
// given).
type Stamp struct {
	Version, Commit, BuildDate string
	Modified                   bool
}

// FromBuildInfo assembles an Info from Go's build information (nil when
// the binary has none) and the -ldflags values.
func FromBuildInfo(bi *debug.BuildInfo, ld Stamp) Info {
	out := Info{Version: ld.Version, Commit: ld.Commit, Modified: ld.Modified, BuildDate: ld.BuildDate,
		GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if out.Commit == "" {
		out.Commit = "unknown"
	}
	if bi != nil {
		if bi.GoVersion != "" {
			out.GoVersion = bi.GoVersion
		}
		if out.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			out.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				out.Commit = s.Value
			case "vcs.time":
				out.CommitDate = s.Value
			case "vcs.modified":
				out.Modified = s.Value == "true"
			}
		}
	}
	if out.Version == "" {
		out.Version = "devel"
	}
	if out.BuildDate == "" {
		out.BuildDate = out.CommitDate
	}
	if out.BuildDate == "" {
		out.BuildDate = "unknown"
	}
	return out
}

// Short is the version with the commit's first 12 digits, e.g.
// "v0.3.0 (4f2c9a1b7d3e)" or "devel (4f2c9a1b7d3e, modified)": what the
// MCP serverInfo and the first log line carry.
func (i Info) Short() string {
	c := i.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	if i.Modified {
		c += ", modified"
	}
	return fmt.Sprintf("%s (%s)", i.Version, c)
}

// String is the multi-line form `workgraph version` prints, for a bug
// report.
func (i Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "workgraph %s\n", i.Version)
	commit := i.Commit
	if i.Modified {
		commit += " (modified work tree)"
	}
	fmt.Fprintf(&b, "commit:     %s\n", commit)
	if i.CommitDate != "" {
		fmt.Fprintf(&b, "committed:  %s\n", i.CommitDate)
	}
	fmt.Fprintf(&b, "built:      %s\n", i.BuildDate)
	fmt.Fprintf(&b, "go:         %s %s\n", i.GoVersion, i.Platform)
	return b.String()
}
