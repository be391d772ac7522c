package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/events"
)

// Message is the data of a standard webhook body: one event of the log,
// with links into the web UI and, for attention events, the request.
type Message struct {
	ProjectID   uuid.UUID       `json:"project_id"`
	Project     string          `json:"project"`
	Seq         int64           `json:"seq"`
	Type        string          `json:"type"`
	At          time.Time       `json:"at"`
	Actor       string          `json:"actor"`
	ItemID      *uuid.UUID      `json:"item_id,omitempty"`
	LeaseID     *uuid.UUID      `json:"lease_id,omitempty"`
	AttentionID *uuid.UUID      `json:"attention_id,omitempty"`
	Payload     json.RawMessage `json:"payload"`
	// Attention is the request of an attention event (nil for others).
	Attention *AttentionInfo `json:"attention,omitempty"`
	// Links open the web UI; absent without a public URL.
	Links *Links `json:"links,omitempty"`
}

// AttentionInfo is what a person needs to know of a request to answer it.
type AttentionInfo struct {
	Question    string `json:"question"`
	ItemTitle   string `json:"item_title"`
	RequestedBy string `json:"requested_by"`
	Reason      string `json:"reason"`
	Blocking    bool   `json:"blocking"`
	State       string `json:"state"`
}

// Links are the web UI's pages of an event.
type Links struct {
	// Item is the item's page.
	Item string `json:"item,omitempty"`
	// Answer opens the inbox at the request (a signed-in person answers).
	Answer string `json:"answer,omitempty"`
	// AnswerLink lets the webhook's recipient answer without signing in:
	// single use, until AnswerLinkExpires (only when the project turned
	// answer links on and the webhook names a recipient).
	AnswerLink        string     `json:"answer_link,omitempty"`
	AnswerLinkExpires *time.Time `json:"answer_link_expires_at,omitempty"`
}

// standardBody is the Standard Webhooks body: {type, timestamp, data}.
type standardBody struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      Message   `json:"data"`
}

func messageID(project uuid.UUID, seq int64) string {
	return fmt.Sprintf("evt_%s_%d", project, seq)
}

// body is the request body of m in format.
func body(format string, m Message) ([]byte, error) {
	var v any = standardBody{Type: m.Type, Timestamp: m.At, Data: m}
	if format == FormatSlack {
		v = slackBody(m)
	}
	// Not HTML-escaped: a body is read by programs, and a question's "<"
	// and "&" stay readable in a receiver's log.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// links are the pages of m under the public base URL (nil without one).
func pageLinks(base string, m Message) *Links {
	if base == "" {
		return nil
	}
	base = strings.TrimRight(base, "/")
	p := base + "/p/" + url.PathEscape(m.Project)
	l := &Links{}
	if m.ItemID != nil {
		l.Item = p + "/items/" + m.ItemID.String()
	}
	if m.AttentionID != nil {
		// The inbox page that shows it (?req=), however many older
		// requests wait before it, scrolled to it (#req-).
		id := m.AttentionID.String()
		l.Answer = p + "/inbox?req=" + id + "#req-" + id
	}
	if *l == (Links{}) {
		return nil
	}
	return l
}

// Slack's bounds: a section's text is at most 3000 characters (a longer
// one refuses the whole message); the question's block is cut to
// slackSectionMax once escaped and quoted.
const slackSectionMax = 2900

// slackTitleMax and slackNameMax bound an item's title and a name in the
// head block once escaped: with the item's link, the project's name and
// the words around them, well within slackSectionMax.
const (
	slackTitleMax = 1500
	slackNameMax  = 500
)

type slackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type slackElement struct {
	Type  string    `json:"type"`
	Text  slackText `json:"text"`
	URL   string    `json:"url,omitempty"`
	Style string    `json:"style,omitempty"`
}

type slackBlock struct {
	Type     string         `json:"type"`
	Text     *slackText     `json:"text,omitempty"`
	Elements []slackElement `json:"elements,omitempty"`
}

type slackMessage struct {
	Text   string       `json:"text"`
	Blocks []slackBlock `json:"blocks,omitempty"`
}

// slackEscape escapes the three characters Slack's mrkdwn reserves (in
// every field Slack reads as mrkdwn: the blocks' and the message's text,
// which notifications show).
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// clipMrkdwn is clip of escaped mrkdwn text: cut at n bytes (so at most n
// characters, Slack's measure), never inside one of slackEscape's
// entities.
func clipMrkdwn(s string, n int) string {
	c := clip(s, n)
	if c == s {
		return s
	}
	body := strings.TrimSuffix(c, "…")
	if amp := strings.LastIndexByte(body, '&'); amp > strings.LastIndexByte(body, ';') {
		body = body[:amp]
	}
	return body + "…"
}

// slackVerb says what an attention event is, for a person.
var slackVerb = map[string]string{
	events.AttentionOpened:  "asks",
	events.AttentionOverdue: "is still waiting for an answer (overdue)",
	events.AttentionAnswer:  "was answered",
	events.AttentionDismiss: "was dismissed",
}

// slackBody is a Slack incoming-webhook body: for an attention event the
// question, the item, who asked and a link to answer; for any other event
// one short line.
func slackBody(m Message) slackMessage {
	a := m.Attention
	if a == nil {
		line := fmt.Sprintf("[%s] %s by %s", slackEscape(m.Project), m.Type, slackEscape(m.Actor))
		if m.Links != nil && m.Links.Item != "" {
			line += " — " + m.Links.Item
		}
		return slackMessage{Text: line}
	}
	verb := slackVerb[m.Type]
	if verb == "" {
		verb = m.Type
	}
	if m.Type == events.AttentionOverdue && a.State != string(attention.StateOpen) {
		// Closed by the time it is sent: by the deadline's default answer
		// (in the deadline's own transaction), or since.
		var p struct {
			Policy string `json:"policy"`
		}
		_ = json.Unmarshal(m.Payload, &p)
		verb = "passed the deadline (the question is " + slackEscape(a.State) + " now)"
		if p.Policy == attention.OverdueDefaultAnswer && a.State == string(attention.StateResolved) {
			verb = "was answered by default at the deadline"
		}
	}
	// The head block names the item and who asked (or acted): each cut
	// once escaped, so that the block stays within slackSectionMax (a
	// title of 500 characters can grow fivefold).
	title := clipMrkdwn(slackEscape(a.ItemTitle), slackTitleMax)
	item := "*" + title + "*"
	if m.Links != nil && m.Links.Item != "" {
		item = "<" + m.Links.Item + "|" + title + ">"
	}
	var head string
	if m.Type == events.AttentionOpened || m.Type == events.AttentionOverdue {
		head = fmt.Sprintf("`%s` %s about %s (project %s)", clipMrkdwn(slackEscape(a.RequestedBy), slackNameMax), verb, item, slackEscape(m.Project))
	} else {
		head = fmt.Sprintf("A question about %s %s by `%s` (project %s)", item, verb, clipMrkdwn(slackEscape(m.Actor), slackNameMax), slackEscape(m.Project))
	}
	msg := slackMessage{
		// The notification text is mrkdwn too: escaped like the blocks.
		Text: fmt.Sprintf("%s %s about “%s”: %s", slackEscape(a.RequestedBy), verb, slackEscape(a.ItemTitle),
			slackEscape(clip(a.Question, 300))),
		Blocks: []slackBlock{
			{Type: "section", Text: &slackText{Type: "mrkdwn", Text: head}},
			{Type: "section", Text: &slackText{Type: "mrkdwn", Text: clipMrkdwn("> "+
				strings.ReplaceAll(slackEscape(a.Question), "\n", "\n> "), slackSectionMax)}},
		},
	}
	var buttons []slackElement
	if m.Links != nil && m.Links.AnswerLink != "" {
		buttons = append(buttons, slackElement{Type: "button", Text: slackText{Type: "plain_text", Text: "Answer"},
			URL: m.Links.AnswerLink, Style: "primary"})
	}
	if m.Links != nil && m.Links.Answer != "" && a.State == "open" {
		label := "Answer in workgraph"
		if len(buttons) > 0 {
			label = "Open in workgraph"
		}
		buttons = append(buttons, slackElement{Type: "button", Text: slackText{Type: "plain_text", Text: label},
			URL: m.Links.Answer})
	}
	if len(buttons) > 0 {
		msg.Blocks = append(msg.Blocks, slackBlock{Type: "actions", Elements: buttons})
	}
	return msg
}
