// Package page is the keyset pagination every workgraph list shares: a
// page size within bounds, and an opaque cursor carrying the last sequence
// number a page showed, tagged with the list that made it so that a cursor
// of one list is refused by another.
package page

import (
	"encoding/base64"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/workgraph-dev/workgraph/wgerr"
)

// Page sizes: a request that names none gets Default; more than Max is
// refused.
const (
	Default = 50
	Max     = 500
)

// MaxBytes is the byte budget of a page: a list's page holds at most Max
// rows and, beyond its first row, no more rows than fit in MaxBytes of
// their JSON as the API answers it (each row's Size: its texts and JSON
// values as encoding/json writes them, escapes included, see TextSize
// and JSONSize, and RowOverhead for the rest). A row may carry a large description,
// metadata or result (an item up to 2 MiB), so a page of 500 such rows
// would be a gigabyte; a page cut by the budget ends early with the cursor
// of its last row, as a page cut by its limit does, and the next page
// resumes after it. A single row larger than the budget is a page of its
// own, so a walk always advances. A list that reads its rows with Read
// holds, besides the page, at most the chunk that overran the budget.
const MaxBytes = 4 << 20

// Chunks of Read: its first query reads at most FirstChunk rows, each
// later one at most ChunkRows (and no more than the budget left is
// expected to hold).
const (
	FirstChunk = 16
	ChunkRows  = 50
)

// Read reads the rows of a page of at most limit rows in chunks and
// returns them: the first limit+1 rows of the list (the one more tells
// that another page follows), or fewer when the list ends or when the
// rows read so far no longer fit in MaxBytes (Fit of them is less than
// their number, so the page ends, before the last, with a next cursor).
// Rows past those are never read, so the rows held at once are the page
// and at most one chunk more, not limit+1 rows of any size.
//
// read(last, n) reads the at most n rows that follow last in the list's
// order (from the request's cursor when last is nil); a chunk shorter than
// n is the end of the list. size is a row's Size. Every chunk should be
// read in one snapshot (a repeatable-read transaction) for the page to be
// one consistent answer. Errors: read's.
func Read[R any](limit int, read func(last *R, n int) ([]R, error), size func(R) int) ([]R, error) {
	want := limit + 1
	n := min(want, FirstChunk)
	var rows []R
	total := 0
	for {
		var last *R
		if len(rows) > 0 {
			last = &rows[len(rows)-1]
		}
		chunk, err := read(last, n)
		if err != nil {
			return nil, err
		}
		for _, r := range chunk {
			total += size(r)
			rows = append(rows, r)
			if total > MaxBytes && len(rows) > 1 {
				return rows, nil
			}
		}
		if len(chunk) < n || len(rows) >= want {
			return rows, nil
		}
		// As many rows as the budget left holds at the rows' mean size,
		// and one more to learn whether the next one still fits.
		mean := max(total/len(rows), 1)
		n = min(want-len(rows), ChunkRows, (MaxBytes-total)/mean+1)
	}
}

// RowOverhead is what Size methods add for a row's fixed members (ids,
// times, states, names): what the row costs beyond its variable text.
const RowOverhead = 512

// TextSize is the length of s as encoding/json writes it, with its
// quotes, escaping HTML as the API's answers do: a quote, a backslash and
// \b \f \n \r \t take 2 bytes, another control character, <, > and &
// 6 (\u003c), U+2028 and U+2029 6 (for their 3), each byte of invalid
// UTF-8 6 (\ufffd), anything else its own bytes. A text of
// control characters or of <, > and & is 6 times its stored size.
func TextSize(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			n += asciiSize[c]
			i++
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && w == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += w
		}
		i += w
	}
	return n
}

// JSONSize is at most the length of raw, a valid JSON value (as
// PostgreSQL returns a jsonb), as encoding/json writes it in an answer:
// compacted (which only removes bytes) and with <, > and & escaped (6 bytes
// each) and U+2028 and U+2029 (6 for their 3). PostgreSQL has already
// escaped quotes and control characters inside its strings.
func JSONSize(raw []byte) int {
	n := len(raw)
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '<', '>', '&':
			n += 5
		case 0xE2: // U+2028 and U+2029 are E2 80 A8 and E2 80 A9
			if i+2 < len(raw) && raw[i+1] == 0x80 && (raw[i+2] == 0xA8 || raw[i+2] == 0xA9) {
				n += 3
			}
		}
	}
	return n
}

// asciiSize is TextSize's length of each ASCII byte.
var asciiSize = func() (t [utf8.RuneSelf]int) {
	for c := range t {
		switch {
		case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
			t[c] = 2
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			t[c] = 6
		default:
			t[c] = 1
		}
	}
	return t
}()

// Fit is how many of the first n rows, taken in order, fit in MaxBytes:
// the longest prefix whose sizes (size(i) of row i) add up to at most
// MaxBytes, and never less than one row (0 only when n is 0).
func Fit(n int, size func(i int) int) int {
	total := 0
	for i := range n {
		total += size(i)
		if total > MaxBytes && i > 0 {
			return i
		}
	}
	return n
}

// Limit returns the page size for a requested one (0 means Default).
//
// Errors: invalid_argument (field "limit") when n is negative or above Max.
func Limit(n int) (int, error) {
	switch {
	case n == 0:
		return Default, nil
	case n < 0 || n > Max:
		return 0, wgerr.InvalidField("limit", "must be between 1 and %d", Max)
	}
	return n, nil
}

// Encode returns the cursor of the list named list after sequence number
// seq.
func Encode(list string, seq int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(list + ":" + strconv.FormatInt(seq, 10)))
}

// Decode returns the sequence number in a cursor that Encode made for the
// same list; the empty cursor is the start (0).
//
// Errors: invalid_argument (field "cursor") for anything else.
func Decode(list, cursor string) (int64, error) {
	if cursor == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err == nil {
		if rest, ok := strings.CutPrefix(string(b), list+":"); ok {
			if seq, err := strconv.ParseInt(rest, 10, 64); err == nil && seq >= 0 {
				return seq, nil
			}
		}
	}
	return 0, wgerr.InvalidField("cursor", "is not a cursor this list returned")
}

// Cut trims rows, read with one row more than limit to learn whether
// another page follows, to the page, and returns with it the cursor of the
// list named list after the page ("" on the last page); seq is a row's
// sequence number.
func Cut[R any](list string, rows []R, limit int, seq func(R) int64) ([]R, string) {
	if len(rows) <= limit {
		return rows, ""
	}
	rows = rows[:limit]
	return rows, Encode(list, seq(rows[limit-1]))
}

// EncodeKey returns the cursor of the list named list after the row with
// sort value key and sequence number seq: the keyset of a list ordered by
// another column than its sequence (ties broken by the sequence).
func EncodeKey(list string, key, seq int64) string {
	return Encode(list+":"+strconv.FormatInt(key, 10), seq)
}

// DecodeKey returns the sort value and the sequence number in a cursor
// that EncodeKey made for the same list; the empty cursor is ok false.
//
// Errors: invalid_argument (field "cursor") for anything else.
func DecodeKey(list, cursor string) (key, seq int64, ok bool, err error) {
	if cursor == "" {
		return 0, 0, false, nil
	}
	bad := wgerr.InvalidField("cursor", "is not a cursor this list returned")
	b, derr := base64.RawURLEncoding.DecodeString(cursor)
	if derr != nil {
		return 0, 0, false, bad
	}
	rest, found := strings.CutPrefix(string(b), list+":")
	k, s, two := strings.Cut(rest, ":")
	if !found || !two {
		return 0, 0, false, bad
	}
	key, kerr := strconv.ParseInt(k, 10, 64)
	seq, serr := strconv.ParseInt(s, 10, 64)
	if kerr != nil || serr != nil {
		return 0, 0, false, bad
	}
	return key, seq, true, nil
}

// After is the keyset position a page of an ascending keyset list starts
// after: the cursor's (DecodeKey), or before every row (the smallest
// int64s) for the empty cursor, the list's first page.
func After(list, cursor string) (key, seq int64, err error) {
	key, seq, ok, err := DecodeKey(list, cursor)
	if err != nil || ok {
		return key, seq, err
	}
	return math.MinInt64, math.MinInt64, nil
}

// EncodeText returns the cursor of the list named list after the row
// whose sort key is the text key (a list ordered by a name).
func EncodeText(list, key string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(list + ":" + key))
}

// DecodeText returns the key in a cursor that EncodeText made for the
// same list; the empty cursor is ok false (the list's start).
//
// Errors: invalid_argument (field "cursor") for anything else.
func DecodeText(list, cursor string) (key string, ok bool, err error) {
	if cursor == "" {
		return "", false, nil
	}
	b, derr := base64.RawURLEncoding.DecodeString(cursor)
	key, found := strings.CutPrefix(string(b), list+":")
	if derr != nil || !found || key == "" || !utf8.ValidString(key) || strings.ContainsRune(key, 0) {
		return "", false, wgerr.InvalidField("cursor", "is not a cursor this list returned")
	}
	return key, true, nil
}
