package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/client"
)

// What kind of object an id a person typed names (the kinds of the
// server's id lookup).
const (
	kindItem      = "item"
	kindLease     = "lease"
	kindAttention = "attention"
	kindToken     = "token"
)

// resolveID turns what a person typed for an id of kind into the full id:
// a whole id as it is, else an unambiguous prefix (the 8 characters the
// tables and the web show are enough) looked up on the server in the
// project. No match is a not-found error; several list the candidates and
// are a usage error. An empty arg stays empty.
func (s *session) resolveID(ctx context.Context, kind, arg string) (string, error) {
	arg = strings.TrimSpace(arg)
	if arg == "" {
		return "", nil
	}
	if len(arg) == 36 {
		if id, err := uuid.Parse(arg); err == nil {
			return id.String(), nil
		}
	}
	ms, err := s.api.LookupIDs(ctx, s.cfg.Project, arg, kind)
	var ae *client.Error
	if errors.As(err, &ae) && ae.Code == client.CodeInvalidArgument {
		return "", prefixUsage(kind, arg)
	}
	if err != nil {
		return "", err
	}
	return s.pickMatch(kind, arg, ms)
}

// prefixUsage is the usage error of what cannot be an id's prefix.
func prefixUsage(kind, arg string) error {
	return usageError("%s id %q: give the whole id or its first characters (at least 4 hex digits, e.g. the 8 that tables show)", kind, arg)
}

// pickMatch is the one id of kind that ms (the matches of the prefix arg)
// names: none is a not-found error, several list the candidates and are a
// usage error.
func (s *session) pickMatch(kind, arg string, ms []client.IDMatch) (string, error) {
	switch len(ms) {
	case 0:
		return "", &exitError{code: ExitNotFound, err: fmt.Errorf("no %s id starts with %q in project %q", kind, arg, s.cfg.Project)}
	case 1:
		return ms[0].ID, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s id %q is ambiguous: %d %ss start with it; type more of the id:", kind, arg, len(ms), kind)
	for _, m := range ms {
		fmt.Fprintf(&b, "\n  %s  %s", m.ID, clip(m.Label, 60))
	}
	if len(ms) >= 10 {
		b.WriteString("\n  (and perhaps more)")
	}
	return "", usageError("%s", b.String())
}

// resolveHook turns what a person typed for a webhook's id into its full
// id, as resolveID does for the other kinds: a project holds few webhooks,
// so their list is read and matched here (the server's lookup knows no
// webhooks).
func (s *session) resolveHook(ctx context.Context, arg string) (string, error) {
	arg = strings.ToLower(strings.TrimSpace(arg))
	if id, err := uuid.Parse(arg); err == nil && len(arg) == 36 {
		return id.String(), nil
	}
	if len(arg) < 4 || strings.Trim(arg, "0123456789abcdef-") != "" {
		return "", prefixUsage("webhook", arg)
	}
	hooks, err := s.api.ListWebhooks(ctx, s.cfg.Project)
	if err != nil {
		return "", err
	}
	var ms []client.IDMatch
	for _, h := range hooks {
		if strings.HasPrefix(h.ID, arg) {
			ms = append(ms, client.IDMatch{Kind: "webhook", ID: h.ID, Label: h.URL})
		}
	}
	return s.pickMatch("webhook", arg, ms)
}

// resolveIDs resolves each of args (see resolveID).
func (s *session) resolveIDs(ctx context.Context, kind string, args []string) ([]string, error) {
	out := make([]string, 0, len(args))
	for _, a := range args {
		id, err := s.resolveID(ctx, kind, a)
		if err != nil {
			return nil, err
		}
		if id != "" {
			out = append(out, id)
		}
	}
	return out, nil
}
