// Package docscan reads the project's Markdown documents for the tests
// that check what the documents show (commands, requests) against the code.
package docscan

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// Docs returns README.md and docs/*.md of the repository at root.
func Docs(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	return append([]string{filepath.Join(root, "README.md")}, docs...), nil
}

// All reads README.md and docs/*.md of the repository at root: each
// file's lines, by file name.
func All(root string) (map[string][]Line, error) {
	files, err := Docs(root)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]Line, len(files))
	for _, f := range files {
		if out[f], err = Read(f); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Line is a line of a Markdown file. Code says whether it is inside a
// fenced code block; there a line ending in a backslash is joined with the
// lines that continue it, and the whole is numbered at its first line.
type Line struct {
	N    int
	Text string
	Code bool
	// Lang is the code block's language, as its opening fence names it
	// ("sh", "json", "text"; "" when the fence names none).
	Lang string
}

// Shell reports whether l is a line of a shell code block (one whose
// fence names sh, bash, shell or console, or no language).
func (l Line) Shell() bool {
	switch l.Lang {
	case "", "sh", "bash", "shell", "console":
		return l.Code
	}
	return false
}

// Read returns file's lines, the fences themselves left out.
func Read(file string) ([]Line, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		out     []Line
		inBlock bool
		lang    string
		pending string
		start   int
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		if t := strings.TrimSpace(text); strings.HasPrefix(t, "```") {
			inBlock, pending = !inBlock, ""
			lang = strings.TrimSpace(strings.TrimPrefix(t, "```"))
			continue
		}
		if !inBlock {
			out = append(out, Line{N: n, Text: text})
			continue
		}
		if pending == "" {
			start = n
		}
		if strings.HasSuffix(text, "\\") {
			pending += strings.TrimSuffix(text, "\\") + " "
			continue
		}
		out = append(out, Line{N: start, Text: pending + text, Code: true, Lang: lang})
		pending = ""
	}
	return out, sc.Err()
}
