package mcp

import (
	"context"
	"encoding/json"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tool inputs. Their jsonschema tags are the argument descriptions an
// agent reads in tools/list: keep them short (the whole list is measured in
// TestToolsListSize).

type takeInput struct {
	WaitSeconds int      `json:"wait_seconds,omitempty" jsonschema:"wait up to this long (max 60) for a task"`
	Labels      []string `json:"labels,omitempty" jsonschema:"only tasks with all these labels"`
	Caps        []string `json:"capabilities,omitempty" jsonschema:"what you can do: only tasks requiring no more"`
}

type progressInput struct {
	Note  string `json:"note,omitempty" jsonschema:"what you did since the last report"`
	Usage *usage `json:"usage,omitempty" jsonschema:"your spend on this task so far"`
}

type finishInput struct {
	Result any    `json:"result" jsonschema:"the outcome: any JSON"`
	Usage  *usage `json:"usage,omitempty" jsonschema:"your total spend on this task"`
}

type releaseInput struct {
	Reason string `json:"reason,omitempty"`
}

type failInput struct {
	Error string `json:"error" jsonschema:"what went wrong"`
}

type splitInput struct {
	Subtasks []subtask `json:"subtasks"`
}

type subtask struct {
	Key       string   `json:"key" jsonschema:"local name for depends_on"`
	Title     string   `json:"title"`
	Body      string   `json:"body,omitempty"`
	DependsOn []string `json:"depends_on,omitempty" jsonschema:"keys of sibling subtasks"`
	Requires  []string `json:"requires,omitempty" jsonschema:"as in create_task"`
	Touches   []string `json:"touches,omitempty" jsonschema:"as in create_task"`
}

type askInput struct {
	Question  string   `json:"question"`
	Suggested []string `json:"suggested_answers,omitempty"`
	Blocking  *bool    `json:"blocking,omitempty" jsonschema:"default true: the task waits for the answer and you stop"`
	DueIn     *int64   `json:"due_in,omitempty" jsonschema:"seconds until the question is overdue (default: the project's deadline, if any)"`
	OnOverdue string   `json:"on_overdue,omitempty" jsonschema:"at the deadline: escalate (notify again), default_answer (answer with default_answer) or release (give the task back to circulation)"`
	Default   string   `json:"default_answer,omitempty" jsonschema:"the answer on_overdue default_answer gives"`
}

type createInput struct {
	Title     string   `json:"title"`
	Body      string   `json:"body,omitempty"`
	Priority  int      `json:"priority,omitempty" jsonschema:"higher first"`
	ParentID  string   `json:"parent_id,omitempty"`
	DependsOn []string `json:"depends_on,omitempty" jsonschema:"task ids"`
	Labels    []string `json:"labels,omitempty"`
	Requires  []string `json:"requires,omitempty" jsonschema:"capabilities a taker needs"`
	Touches   []string `json:"touches,omitempty" jsonschema:"write scopes, e.g. repo:web/**"`
}

type dependencyInput struct {
	TaskID    string `json:"task_id"`
	DependsOn string `json:"depends_on" jsonschema:"id of the task it waits for"`
}

type showInput struct {
	TaskID string `json:"task_id,omitempty" jsonschema:"default: your current task"`
}

type listInput struct {
	State    string `json:"state,omitempty" jsonschema:"ready, leased, blocked, attention, done or cancelled"`
	Label    string `json:"label,omitempty"`
	ParentID string `json:"parent_id,omitempty"`
	Cursor   string `json:"cursor,omitempty"`
}

// addTools registers the tool list on m.
func (s *Server) addTools(m *sdk.Server) {
	add(s, m, "take_task", "Take the next ready task (with its past questions and answers). You hold it until you finish, release, fail, split or ask about it. Its fence.token goes in the Workgraph-Fence header of your requests to the systems you change (operation ids start with fence.operation_prefix), so they can refuse you once a newer attempt at the task has written.", s.take)
	add(s, m, "report_progress", "Report progress on your task. Answers whether a person asked you to stop and any answers to your questions.", s.progress)
	add(s, m, "finish_task", "Complete your task with a result.", s.finish)
	add(s, m, "release_task", "Give your task back untouched for someone else.", s.release)
	add(s, m, "fail_task", "Report that your task failed; it is retried later.", s.fail)
	add(s, m, "split_task", "Replace your task by subtasks; it resumes when they are all done.", s.split)
	add(s, m, "ask_person", "Ask a person about your task.", s.ask)
	add(s, m, "create_task", "Create a task.", s.create)
	add(s, m, "add_dependency", "Make a task wait for another.", s.addDependency)
	add(s, m, "show_task", "Show a task.", s.show)
	add(s, m, "list_tasks", "List tasks.", s.list)
}

// add registers one tool. Tools have no output schema: they answer compact
// JSON text, which keeps tools/list small.
func add[In any](s *Server, m *sdk.Server, name, description string, h func(context.Context, *session, In) (*sdk.CallToolResult, error)) {
	sdk.AddTool(m, &sdk.Tool{Name: name, Description: description},
		func(ctx context.Context, req *sdk.CallToolRequest, in In) (*sdk.CallToolResult, any, error) {
			sess := s.session(req.Session)
			ctx, span := s.traceCall(ctx, req, name)
			res, err := h(ctx, sess, in)
			if err != nil {
				endCall(span, true, err.Error())
				return s.toolError(err), nil, nil
			}
			endCall(span, false, "")
			if warning := sess.lostWarning(); warning != "" {
				res.Content = append([]sdk.Content{&sdk.TextContent{Text: warning}}, res.Content...)
			}
			return res, nil, nil
		})
}

// reply answers v as compact JSON text, after an optional sentence for the
// agent.
func reply(note string, v any) (*sdk.CallToolResult, error) {
	var content []sdk.Content
	if note != "" {
		content = append(content, &sdk.TextContent{Text: note})
	}
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		content = append(content, &sdk.TextContent{Text: string(b)})
	}
	return &sdk.CallToolResult{Content: content}, nil
}
