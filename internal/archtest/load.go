package archtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// Load returns the import graph of the module's packages (their non-test
// imports), as `go list -e -json` run in dir (any directory of the module)
// reports it; -e lists even a package that does not build, so a planted
// import that closes a cycle is reported by its rule.
func Load(dir string) (Graph, error) {
	mod, err := goOutput(dir, "list", "-m")
	if err != nil {
		return nil, err
	}
	module := strings.TrimSpace(mod)
	out, err := goOutput(dir, "list", "-e", "-json", module+"/...")
	if err != nil {
		return nil, err
	}
	g := Graph{}
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("archtest: decoding go list: %w", err)
		}
		from, ok := relative(module, p.ImportPath)
		if !ok {
			continue
		}
		g[from] = nil
		for _, imp := range p.Imports {
			if to, ok := relative(module, imp); ok {
				g[from] = append(g[from], to)
			}
		}
	}
	if len(g) == 0 {
		return nil, fmt.Errorf("archtest: go list found no packages of %s", module)
	}
	return g, nil
}

func relative(module, path string) (string, bool) {
	if path == module {
		return ".", true
	}
	rel, ok := strings.CutPrefix(path, module+"/")
	return rel, ok
}

func goOutput(dir string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("archtest: go %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}
