package web

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// A JSON value a page shows (an attention request's context, a late
// report's payload, an item's result) is shown indented only while that
// stays small: indenting costs two bytes a level on every line, so a
// deeply nested value grows with the square of its depth. Past
// jsonIndentDepth levels or jsonShownBytes of text it is shown compact and
// cut at jsonShownBytes, and the page links to the whole value.
const (
	jsonIndentDepth = 24
	jsonShownBytes  = 16 << 10
)

// JSONBlock is a JSON value as a page shows it: Text (escaped by the
// template like any other text), and Cut when Text is only its start
// (Bytes is then the whole value's length).
type JSONBlock struct {
	Text  string
	Cut   bool
	Bytes int
}

// jsonBlock is raw as a page shows it: indented when that is at most
// jsonShownBytes and raw is at most jsonIndentDepth deep, else compact and
// cut at jsonShownBytes. The zero block (Text "") for no value.
func jsonBlock(raw json.RawMessage) JSONBlock {
	if len(raw) == 0 || string(raw) == "null" {
		return JSONBlock{}
	}
	b := JSONBlock{Bytes: len(raw)}
	if len(raw) <= jsonShownBytes && jsonDepth(raw) <= jsonIndentDepth {
		var buf bytes.Buffer
		if err := json.Indent(&buf, raw, "", "  "); err == nil && buf.Len() <= jsonShownBytes {
			b.Text = buf.String()
			return b
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		buf.Reset()
		buf.Write(raw)
	}
	s := buf.String()
	if len(s) > jsonShownBytes {
		cut := jsonShownBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s, b.Cut = s[:cut]+" …", true
	}
	b.Text = s
	return b
}

// jsonDepth is how deeply raw's arrays and objects nest (brackets inside
// strings do not count).
func jsonDepth(raw []byte) int {
	depth, most, inString := 0, 0, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			depth++
			most = max(most, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return most
}
