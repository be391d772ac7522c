package cli

import (
	"bytes"
	"testing"
)

// TestTermSafe: control characters become visible escapes, carriage
// returns go, newlines, tabs and other text (a rune cut between two
// writes included) pass as they are.
func TestTermSafe(t *testing.T) {
	for name, c := range map[string]struct {
		writes []string
		want   string
	}{
		"Text":       {[]string{"héllo\tworld\n"}, "héllo\tworld\n"},
		"Escape":     {[]string{"a\x1b[2Jb\x07"}, `a\u001b[2Jb\u0007`},
		"C1":         {[]string{"a\u009b1mb"}, `a\u009b1mb`},
		"DEL":        {[]string{"a\x7fb"}, `a\u007fb`},
		"CR":         {[]string{"line\r\nnext\rforged"}, "line\nnextforged"},
		"NotUTF8":    {[]string{"a\x9bb\xff"}, `a\x9bb\xff`},
		"CutRune":    {[]string{"h\xc3", "\xa9llo"}, "héllo"},
		"CutControl": {[]string{"a\xc2", "\x9b"}, `a\u009b`},
	} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			w := &termSafe{w: &b}
			for _, s := range c.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", s, n, err)
				}
			}
			if b.String() != c.want {
				t.Errorf("wrote %q, want %q", b.String(), c.want)
			}
		})
	}
}
