package cli

import (
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/workgraph-dev/workgraph/internal/docscan"
)

// TestDocumentedCommandsExist reads every `workgraph ...` command line in
// the code blocks of the README and docs/ and checks that the command
// exists and takes the flags shown. A reader copies these lines; a renamed
// command or flag must fail here, not in a new user's terminal.
func TestDocumentedCommandsExist(t *testing.T) {
	docs, err := docscan.All("..")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for file, lines := range docs {
		for _, c := range documentedCommands(lines) {
			seen++
			if err := checkCommand(c); err != nil {
				t.Errorf("%s:%d: %q: %v", file, c.line, strings.Join(c.args, " "), err)
			}
		}
	}
	// The docs show dozens of commands; finding few means the scan broke.
	if seen < 50 {
		t.Fatalf("found only %d documented workgraph commands", seen)
	}
}

// TestCheckCommandRefuses plants the mistakes the check is there for.
func TestCheckCommandRefuses(t *testing.T) {
	for _, bad := range []string{
		"plans import fleet.yaml",             // no such command
		"items frobnicate <id>",               // no such subcommand
		"claim --worker w --capabilitiez web", // no such flag
		"items add Title --depends-on",        // a flag without its value
		"work --lease 10x -- ./agent.sh",      // a value of the wrong type
	} {
		c := documentedCommand{args: workgraphInvocations("workgraph " + bad)[0]}
		if err := checkCommand(c); err == nil {
			t.Errorf("%q passed the check", bad)
		}
	}
	for _, good := range []string{
		"import fleet.yaml",
		"items add \"Add the endpoint\" --priority 5 --depends-on <id>",
		"claim --max N",
		"work --loop --wait 60s --worker backend-$i --capabilities go,db-migrations -- ./agent.sh",
	} {
		c := documentedCommand{args: workgraphInvocations("workgraph " + good)[0]}
		if err := checkCommand(c); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
}

// checkCommand finds c's command in a fresh command tree and parses its
// flags as the command would.
func checkCommand(c documentedCommand) error {
	root := newRoot(IO{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard})
	cmd, rest, err := root.Find(c.args)
	if err != nil || cmd == root {
		return errors.New("no such command")
	}
	if err := cmd.ParseFlags(rest); err != nil && !placeholderValue(err, c.inline) {
		return err
	}
	if cmd.HasSubCommands() {
		// A group's arguments: a word that names none of its commands.
		return cmd.ValidateArgs(cmd.Flags().Args())
	}
	return nil
}

var inlineCode = regexp.MustCompile("`([^`]+)`")

type documentedCommand struct {
	line int
	args []string // after "workgraph"
	// inline: from a code span in a sentence, which may name a flag
	// without its value ("`workgraph serve --sweep-interval` defaults to").
	inline bool
}

// placeholderValue reports whether err is only about a placeholder: a
// value written as a name ("--max N", "--item <id>"), --help, or, in a
// sentence, a flag named without its value.
func placeholderValue(err error, inline bool) bool {
	if errors.Is(err, pflag.ErrHelp) {
		return true
	}
	if inline && strings.HasPrefix(err.Error(), "flag needs an argument") {
		return true
	}
	m := invalidValue.FindStringSubmatch(err.Error())
	return m != nil && placeholderWord.MatchString(m[1])
}

var (
	invalidValue    = regexp.MustCompile(`^invalid argument "([^"]*)"`)
	placeholderWord = regexp.MustCompile(`^([A-Z][A-Z_]*|<[a-z][a-z-]*>)$`)
)

// documentedCommands returns the workgraph command lines of a document:
// in code blocks, a line's words from "workgraph" (at its start, after a
// prompt, or after a shell operator) to the next shell operator; in
// sentences, a code span that starts with "workgraph ".
func documentedCommands(lines []docscan.Line) []documentedCommand {
	var out []documentedCommand
	for _, l := range lines {
		if l.Shell() {
			for _, args := range workgraphInvocations(l.Text) {
				out = append(out, documentedCommand{line: l.N, args: args})
			}
			continue
		}
		if l.Code {
			continue // a JSON answer, a log: no commands
		}
		for _, m := range inlineCode.FindAllStringSubmatch(l.Text, -1) {
			if strings.HasPrefix(m[1], "workgraph ") {
				for _, args := range workgraphInvocations(m[1]) {
					out = append(out, documentedCommand{line: l.N, args: args, inline: true})
				}
			}
		}
	}
	return out
}

// workgraphInvocations splits a shell line into words (quotes kept
// together, a comment dropped) and returns the arguments of each
// invocation of workgraph in it.
func workgraphInvocations(line string) [][]string {
	words := shellWords(line)
	var out [][]string
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w.text != "workgraph" || w.quoted {
			continue
		}
		// A command position: the line's start, after a prompt, after an
		// operator or a command substitution's "$(", or after "do"/"then".
		if i > 0 {
			p := words[i-1]
			if p.quoted || !(p.op || p.text == "$" || p.text == "$(" || p.text == "do" || p.text == "then" || p.text == "exec") {
				continue
			}
		}
		var args []string
		for _, a := range words[i+1:] {
			if a.op && !a.quoted {
				break
			}
			// "[--after N]" in a synopsis: the flag without its brackets.
			args = append(args, strings.Trim(a.text, "[]"))
		}
		out = append(out, args)
	}
	return out
}

type shellWord struct {
	text   string
	quoted bool // came (partly) from quotes
	op     bool // a shell operator: | || && ; & > < ( ) $(
}

var placeholder = regexp.MustCompile(`^<[a-z][a-z-]*>`)

func shellWords(line string) []shellWord {
	var (
		words []shellWord
		cur   strings.Builder
		in    bool
		quote bool
	)
	flush := func() {
		if in {
			words = append(words, shellWord{text: cur.String(), quoted: quote})
		}
		cur.Reset()
		in, quote = false, false
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'' || c == '"':
			j := strings.IndexByte(line[i+1:], c)
			if j < 0 {
				j = len(line) - i - 1
			}
			cur.WriteString(line[i+1 : i+1+j])
			in, quote = true, true
			i += j + 1
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !in:
			flush()
			return words
		case c == '$' && i+1 < len(line) && line[i+1] == '(':
			flush()
			words = append(words, shellWord{text: "$(", op: true})
			i++
		case c == '$' && i+1 < len(line) && line[i+1] == '{':
			// ${VAR}: one word with what follows.
			j := strings.IndexByte(line[i:], '}')
			if j < 0 {
				j = len(line) - i - 1
			}
			cur.WriteString(line[i : i+j+1])
			in = true
			i += j
		case c == '<' && placeholder.MatchString(line[i:]):
			// <id>, <request-id>: a placeholder word, not a redirection.
			m := placeholder.FindString(line[i:])
			cur.WriteString(m)
			in = true
			i += len(m) - 1
		case strings.IndexByte("|&;<>()", c) >= 0:
			flush()
			op := string(c)
			if i+1 < len(line) && (line[i+1] == c || (c == '>' && line[i+1] == '&')) {
				op += string(line[i+1])
				i++
			}
			words = append(words, shellWord{text: op, op: true})
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	flush()
	return words
}
