package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workgraph-dev/workgraph/wgerr"
)

// maxWaitSeconds bounds take_task's long poll (the API's own bound).
const maxWaitSeconds = 60

// take claims the next ready task for the session.
func (s *Server) take(ctx context.Context, sess *session, in takeInput) (*sdk.CallToolResult, error) {
	sess.ops.Lock()
	defer sess.ops.Unlock()
	if h := sess.current(); h != nil {
		if !h.isLost(sess) {
			return nil, wgerr.New(wgerr.CodeConflict,
				"you already hold task %s: finish_task, fail_task, release_task, split_task or ask_person first", h.taskID)
		}
		sess.drop(h)
	}
	if in.WaitSeconds < 0 || in.WaitSeconds > maxWaitSeconds {
		return nil, wgerr.InvalidField("wait_seconds", "must be between 0 and %d", maxWaitSeconds)
	}
	req := claimRequest{
		Worker: s.cfg.Worker, LeaseSeconds: s.cfg.LeaseSeconds, WaitSeconds: in.WaitSeconds, Labels: in.Labels,
		Capabilities: in.Caps,
	}
	c, err := s.api.Claim(ctx, req)
	if err != nil {
		return nil, err
	}
	if c == nil {
		note := "No task is ready. Try again later (wait_seconds waits up to 60 s)."
		key := strings.Join(req.Labels, ",") + "|" + strings.Join(req.Capabilities, ",")
		if key != sess.whyFor || time.Since(sess.whyAt) >= whyEvery {
			sess.why, sess.whyFor, sess.whyAt = s.api.WhyNothing(ctx, req), key, time.Now()
		}
		if len(sess.why) > 0 {
			note += " Ready tasks you could not take: " + strings.Join(sess.why, "; ") + "."
		}
		return reply(note, nil)
	}
	sess.whyAt = time.Time{}
	if !sess.hold(c) {
		// The session ended while the claim was in flight.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = s.api.Release(rctx, c.Fence, "MCP session ended")
		return nil, errors.New("the MCP session has ended")
	}
	return reply("This task is yours until you finish, fail, release, split or ask about it.", c.Task)
}

// progressReply is report_progress's answer.
type progressReply struct {
	TaskID        string `json:"task_id"`
	StopRequested bool   `json:"stop_requested"`
	// StopNote is the reason the person who asked for the stop gave.
	StopNote string     `json:"stop_note,omitempty"`
	Answers  []question `json:"answers,omitempty"`
}

// progress heartbeats with a note and hands over what people said.
func (s *Server) progress(ctx context.Context, sess *session, in progressInput) (*sdk.CallToolResult, error) {
	budget := false
	h, err := sess.worker(false, func(h *held) error {
		b, err := s.api.Heartbeat(ctx, h.fence, in.Note, in.Usage)
		if err == nil && b.BudgetSpent {
			budget = true
		}
		if err == nil {
			sess.note(h, b)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	answers, stop, note := sess.news(h)
	out := progressReply{TaskID: h.taskID, StopRequested: stop, StopNote: note, Answers: answers}
	if stop && budget {
		return reply("The budget of this task's tree is spent: stop now and release_task.", out)
	}
	if stop && note != "" {
		return reply("A person asked you to stop, saying: "+strconv.Quote(note)+". Wrap up, then release_task (or finish_task if it is done).", out)
	}
	if stop {
		return reply("A person asked you to stop: wrap up, then release_task (or finish_task if it is done).", out)
	}
	return reply("", out)
}

// finish completes the session's task.
func (s *Server) finish(ctx context.Context, sess *session, in finishInput) (*sdk.CallToolResult, error) {
	result, err := json.Marshal(in.Result)
	if err != nil {
		return nil, wgerr.InvalidField("result", "%v", err)
	}
	h, err := sess.worker(true, func(h *held) error { return s.api.Complete(ctx, h.fence, result, in.Usage) })
	if err != nil {
		return nil, err
	}
	return reply("Task "+h.taskID+" is done. Call take_task for the next one.", nil)
}

// release gives the session's task back.
func (s *Server) release(ctx context.Context, sess *session, in releaseInput) (*sdk.CallToolResult, error) {
	h, err := sess.worker(true, func(h *held) error { return s.api.Release(ctx, h.fence, in.Reason) })
	if err != nil {
		return nil, err
	}
	return reply("Task "+h.taskID+" was released.", nil)
}

// fail reports the session's task as failed.
func (s *Server) fail(ctx context.Context, sess *session, in failInput) (*sdk.CallToolResult, error) {
	if in.Error == "" {
		return nil, wgerr.InvalidField("error", "must not be empty")
	}
	var out failed
	h, err := sess.worker(true, func(h *held) (err error) {
		out, err = s.api.Fail(ctx, h.fence, in.Error)
		return err
	})
	if err != nil {
		return nil, err
	}
	switch {
	case out.AskedPerson:
		return reply("Task "+h.taskID+" is marked failed. It failed as often in a row as the project allows, so a person is asked to look at it; it is not retried until they answer.", nil)
	case out.RetryAfter != nil:
		return reply("Task "+h.taskID+" is marked failed and will be retried from "+out.RetryAfter.UTC().Format(time.RFC3339)+".", nil)
	}
	return reply("Task "+h.taskID+" is marked failed and will be retried later.", nil)
}

// split decomposes the session's task into subtasks.
func (s *Server) split(ctx context.Context, sess *session, in splitInput) (*sdk.CallToolResult, error) {
	if len(in.Subtasks) == 0 {
		return nil, wgerr.InvalidField("subtasks", "must not be empty")
	}
	var children []taskRef
	h, err := sess.worker(true, func(h *held) error {
		var err error
		children, err = s.api.Decompose(ctx, h.fence, in.Subtasks)
		return err
	})
	if err != nil {
		return nil, err
	}
	return reply("Task "+h.taskID+" now waits for these subtasks and is no longer yours. Call take_task.", children)
}

// ask opens an attention request; a blocking one ends the lease.
func (s *Server) ask(ctx context.Context, sess *session, in askInput) (*sdk.CallToolResult, error) {
	if in.Question == "" {
		return nil, wgerr.InvalidField("question", "must not be empty")
	}
	blocking := in.Blocking == nil || *in.Blocking
	var id string
	h, err := sess.worker(blocking, func(h *held) error {
		var err error
		id, err = s.api.Ask(ctx, h.fence, in)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := map[string]string{"question_id": id, "task_id": h.taskID}
	if blocking {
		return reply("Asked. Task "+h.taskID+" now waits for a person and is no longer yours: stop working on it. "+
			"Call take_task; you will usually get it back, with the answer, once a person has answered.", out)
	}
	return reply("Asked. Keep working; the answer arrives in report_progress.", out)
}
