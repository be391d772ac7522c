package web

import (
	"bytes"
	"encoding/json"
	"strings"
)

// progressChars bounds the progress text a table cell shows (the tooltip
// and the item page's live lease show more).
const progressChars = 120

// progressText is what a worker last reported on its heartbeats, for a
// person: a JSON string as its text; an object's "message", "summary",
// "status", "text" or "note" (what the MCP server reports) member (the
// first that is a string) followed by its
// other members as compact JSON; anything else as compact JSON. "" when the
// worker reported nothing. At most n characters (0: no bound).
func progressText(raw json.RawMessage, n int) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return clipText(s, n)
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil {
		for _, key := range []string{"message", "summary", "status", "text", "note"} {
			if json.Unmarshal(obj[key], &s) == nil && s != "" {
				delete(obj, key)
				if len(obj) == 0 {
					return clipText(s, n)
				}
				rest, _ := json.Marshal(obj)
				return clipText(s+" "+string(rest), n)
			}
		}
	}
	var compact bytes.Buffer
	if json.Compact(&compact, raw) != nil {
		return clipText(string(raw), n)
	}
	return clipText(compact.String(), n)
}

// clipText shortens s to n runes on one line (n 0: only the line).
func clipText(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if n <= 0 || len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
