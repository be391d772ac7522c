package graph

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/workgraph-dev/workgraph/input"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// Input limits.
const (
	MaxTitleChars    = 500
	MaxBodyBytes     = 1 << 20
	MaxMetadataBytes = 1 << 20
	// MaxLabels and MaxLabelChars bound the labels of an item and of a
	// claim alike (CleanLabels).
	MaxLabels     = 32
	MaxLabelChars = 64
)

// labelRE is the one label rule: 1 to MaxLabelChars of ASCII letters,
// digits and . _ : / = + -.
var labelRE = regexp.MustCompile(`^[A-Za-z0-9._:/=+-]{1,` + strconv.Itoa(MaxLabelChars) + `}$`)

// cleanTitle trims a title and checks its length (1..500 characters) and
// that it is one line of visible text (input.Line).
func cleanTitle(field, title string) (string, error) {
	t := strings.TrimSpace(title)
	if t == "" {
		return "", wgerr.InvalidField(field, "must not be empty")
	}
	if n := utf8.RuneCountInString(t); n > MaxTitleChars {
		return "", wgerr.InvalidField(field, "is %d characters long; at most %d are allowed", n, MaxTitleChars)
	}
	if err := input.Line(field, t); err != nil {
		return "", err
	}
	return t, nil
}

func checkBody(field, body string) error {
	if len(body) > MaxBodyBytes {
		return &wgerr.Error{Code: wgerr.CodePayloadTooLarge, Field: field,
			Message: field + ": is larger than 1 MiB"}
	}
	return input.Prose(field, body)
}

// CleanLabels is the one label validator, for the labels an item carries
// and those a claim asks for: at most MaxLabels, each 1 to MaxLabelChars of
// [A-Za-z0-9._:/=+-]. It drops duplicates, keeping the first occurrence's
// order. Errors: invalid_argument naming field.
func CleanLabels(field string, labels []string) ([]string, error) {
	if len(labels) > MaxLabels {
		return nil, wgerr.InvalidField(field, "has %d labels; at most %d are allowed", len(labels), MaxLabels)
	}
	out := make([]string, 0, len(labels))
	seen := make(map[string]bool, len(labels))
	for _, l := range labels {
		if !labelRE.MatchString(l) {
			return nil, wgerr.InvalidField(field, "label %q must be 1 to %d characters of letters, digits and . _ : / = + -", l, MaxLabelChars)
		}
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out, nil
}

// cleanMatching is the one validator of what the claim matches an item
// by, wherever an item is created (CreateItem, a decomposition's child, a
// plan item): its labels and required capabilities (CleanLabels) and its
// write scopes (CleanScopes). prefix names the input ("" for a top-level
// item, "children[2]." for a child), so an error names its field.
func cleanMatching(prefix string, labels, requires, touches []string) (l, r, t []string, err error) {
	if l, err = CleanLabels(prefix+"labels", labels); err != nil {
		return nil, nil, nil, err
	}
	if r, err = CleanLabels(prefix+"requires", requires); err != nil {
		return nil, nil, nil, err
	}
	if t, err = CleanScopes(prefix+"touches", touches); err != nil {
		return nil, nil, nil, err
	}
	return l, r, t, nil
}

// cleanMetadata checks metadata is a JSON object; empty means {}.
func cleanMetadata(field string, m json.RawMessage) (json.RawMessage, error) {
	if len(m) == 0 {
		return json.RawMessage(`{}`), nil
	}
	if len(m) > MaxMetadataBytes {
		return nil, &wgerr.Error{Code: wgerr.CodePayloadTooLarge, Field: field, Message: field + ": is larger than 1 MiB"}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(m, &obj); err != nil || obj == nil {
		return nil, wgerr.InvalidField(field, "must be a JSON object")
	}
	return m, nil
}

func checkBy(by string) error {
	if strings.TrimSpace(by) == "" {
		return wgerr.InvalidField("created_by", "must name the principal")
	}
	return nil
}

// labelsJSON encodes labels for the bulk insert.
func labelsJSON(labels []string) string {
	if labels == nil {
		labels = []string{}
	}
	b, _ := json.Marshal(labels)
	return string(b)
}

// cleanOnExpiry checks an on_expiry setting: "retry" or "reconcile", or ""
// (the project's default) when orDefault.
func cleanOnExpiry(field, v string, orDefault bool) (string, error) {
	v = strings.TrimSpace(v)
	switch {
	case v == OnExpiryRetry, v == OnExpiryReconcile, v == "" && orDefault:
		return v, nil
	}
	return "", wgerr.InvalidField(field, "must be %q or %q", OnExpiryRetry, OnExpiryReconcile)
}
