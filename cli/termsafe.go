package cli

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// termSafe writes to a terminal what the server sent as text, so that
// text an agent (or a webhook receiver) wrote can show but not act: every
// control character but newline and tab (C0, DEL and the C1 range
// U+0080..U+009F, which start escape sequences that clear the screen,
// rewrite the window title, write the clipboard or forge lines) is written
// as a visible \u escape instead (a byte that is not UTF-8 as \x), and carriage returns, which would let a
// line overwrite the one before, are dropped. A client command's output
// and its error messages pass through it; the output of the command that
// `workgraph work` runs, and the command line's own progress line, do not.
type termSafe struct {
	w io.Writer
	// pending holds the first bytes of a multi-byte rune cut by the end of
	// a Write, completed by the next.
	pending []byte
}

// Write writes p with its control characters escaped; it reports len(p)
// when the underlying writer took everything.
func (t *termSafe) Write(p []byte) (int, error) {
	buf := make([]byte, 0, len(p)+len(t.pending))
	in := append(t.pending, p...)
	t.pending = nil
	for len(in) > 0 {
		r, size := utf8.DecodeRune(in)
		if r == utf8.RuneError && size <= 1 && !utf8.FullRune(in) {
			// A rune cut by the end of p: keep it for the next Write.
			t.pending = append([]byte(nil), in...)
			break
		}
		switch {
		case r == utf8.RuneError && size == 1:
			// Not UTF-8: a lone byte, which an 8-bit terminal may read
			// as a control (0x9b is CSI).
			buf = fmt.Appendf(buf, `\x%02x`, in[0])
		case r == '\n' || r == '\t':
			buf = append(buf, byte(r))
		case r == '\r':
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			buf = fmt.Appendf(buf, `\u%04x`, r)
		default:
			buf = append(buf, in[:size]...)
		}
		in = in[size:]
	}
	if _, err := t.w.Write(buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// safe returns io with its output and error streams passed through
// termSafe (the input is left alone).
func (io IO) safe() IO {
	io.Out = &termSafe{w: io.Out}
	io.Err = &termSafe{w: io.Err}
	return io
}
