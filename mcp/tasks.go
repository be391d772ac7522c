package mcp

import (
	"context"
	"errors"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// create adds a task to the project.
func (s *Server) create(ctx context.Context, _ *session, in createInput) (*sdk.CallToolResult, error) {
	if strings.TrimSpace(in.Title) == "" {
		return nil, wgerr.InvalidField("title", "must not be empty")
	}
	t, err := s.api.CreateTask(ctx, in)
	if err != nil {
		return nil, err
	}
	return reply("", t)
}

// addDependency makes one task wait for another.
func (s *Server) addDependency(ctx context.Context, _ *session, in dependencyInput) (*sdk.CallToolResult, error) {
	if in.TaskID == "" || in.DependsOn == "" {
		return nil, wgerr.New(wgerr.CodeInvalid, "task_id and depends_on are required")
	}
	if err := s.api.AddDependency(ctx, in.TaskID, in.DependsOn); err != nil {
		return nil, err
	}
	return reply("Task "+in.TaskID+" now waits for "+in.DependsOn+".", nil)
}

// show answers a task, by default the session's.
func (s *Server) show(ctx context.Context, sess *session, in showInput) (*sdk.CallToolResult, error) {
	id := in.TaskID
	if id == "" {
		h := sess.current()
		if h == nil {
			return nil, wgerr.InvalidField("task_id", "required when you hold no task")
		}
		id = h.taskID
	}
	t, err := s.api.GetTask(ctx, id)
	if err != nil {
		return nil, err
	}
	return reply("", t)
}

// list answers a page of tasks.
func (s *Server) list(ctx context.Context, _ *session, in listInput) (*sdk.CallToolResult, error) {
	page, err := s.api.ListTasks(ctx, in)
	if err != nil {
		return nil, err
	}
	return reply("", page)
}

// toolError turns an error into the tool result the agent reads: what went
// wrong and, where it helps, what to do next.
func (s *Server) toolError(err error) *sdk.CallToolResult {
	var res sdk.CallToolResult
	var (
		lost *leaseLostError
		ce   *client.Error
		we   *wgerr.Error
		msg  string
	)
	switch {
	case errors.As(err, &lost):
		msg = lost.Error()
	case errors.As(err, &ce):
		// The server's own words, without the HTTP details.
		detail := ce.Detail
		if detail == "" {
			detail = ce.Title
		}
		msg = ce.Code + ": " + detail
		if hint := hints[ce.Code]; hint != "" {
			msg += " " + hint
		}
		if ce.Code == client.CodeNotFound && strings.HasPrefix(detail, "project ") {
			// Every tool fails alike until the MCP server is started
			// with a project that exists.
			msg += " This MCP server works in the project set by WORKGRAPH_PROJECT (or --project) when it was started; " +
				"a person must restart it with an existing project. Other tools will fail alike."
		}
	case client.Unreachable(err):
		// The transport's words name the request, not what to do.
		msg = "unavailable: cannot reach the workgraph server at " + s.serverURL() + " (" + innermost(err) + "). " +
			"It may not be running, or this MCP server's WORKGRAPH_URL (--url) points elsewhere; try again later, " +
			"or ask a person to check the server."
	case errors.As(err, &we):
		msg = string(we.Code) + ": " + we.Error()
	default:
		msg = err.Error()
	}
	res.SetError(errors.New(msg))
	return &res
}

// hints say what to do next after an error of a kind.
var hints = map[string]string{
	client.CodeConflictingResult: "The task was already completed with another result; that result stands.",
	client.CodeDependencyCycle:   "Nothing was stored.",
	client.CodeBlocked: "Nothing was recorded and the task is still yours: a person made it wait for other work while you held it. " +
		"Finish only once that work is done (keep reporting progress meanwhile), or call release_task to hand it back.",
	client.CodeUnauthenticated: "The workgraph token of this MCP server is missing or revoked.",
	client.CodeForbidden:       "The workgraph token of this MCP server may not do this.",
	client.CodeRateLimited:     "Wait a little and try again.",
	client.CodeUnavailable:     "The workgraph server is unavailable; try again shortly.",
	client.CodeOutcomeUnknown:  "The request took effect but its answer was lost; look at the task's state before doing it again.",
}

// serverURL is the workgraph server's base URL, for messages.
func (s *Server) serverURL() string {
	if s.cfg.Client == nil {
		return "its URL"
	}
	return s.cfg.Client.BaseURL()
}

// innermost is the text of the error at the end of err's chain: for a
// transport failure, its cause ("connect: connection refused").
func innermost(err error) string {
	for {
		inner := errors.Unwrap(err)
		if inner == nil {
			return err.Error()
		}
		err = inner
	}
}
