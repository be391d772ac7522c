package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Limits of one message on the stdio transport.
const (
	// MaxStdioMessageBytes bounds one line (one JSON-RPC message).
	MaxStdioMessageBytes = 4 << 20
	// maxJSONDepth bounds the nesting of a message's arrays and objects.
	maxJSONDepth = 64
)

// StdioTransport is the MCP transport of `workgraph mcp` on stdin and
// stdout: one JSON-RPC 2.0 message per line. Unlike the SDK's IOTransport,
// which ends the session (releasing the agent's task) at the first line it
// cannot decode, a malformed line is answered with a JSON-RPC error
// (-32700 parse error when it is not JSON, -32600 invalid request when it
// is JSON but not a JSON-RPC message), with the request's id when it has a
// valid one and null otherwise, and the session goes on. Batches (JSON
// arrays) are refused as invalid requests: MCP dropped them in 2025-06-18.
type StdioTransport struct {
	Reader io.Reader
	Writer io.Writer
	// Logger hears of refused lines (nil: discarded).
	Logger *slog.Logger
}

// Connect starts reading t.Reader.
func (t *StdioTransport) Connect(context.Context) (sdk.Connection, error) {
	log := t.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &stdioConn{w: t.Writer, log: log, incoming: make(chan jsonrpc.Message), closed: make(chan struct{}),
		pending: map[any]bool{}, answered: make(chan struct{}, 1)}
	go c.readLoop(t.Reader)
	return c, nil
}

type stdioConn struct {
	w   io.Writer
	log *slog.Logger

	writeMu sync.Mutex

	incoming chan jsonrpc.Message
	readErr  error // set before incoming is closed

	// pending are the ids of the requests handed to Read and not answered
	// yet: at the end of the input Read waits for them (up to
	// eofAnswerWait), so that requests piped in with the input closed right
	// after them are answered before the session ends. answered is told of
	// every answer written.
	pendingMu sync.Mutex
	pending   map[any]bool
	answered  chan struct{}
	closeOnce sync.Once
	closed    chan struct{}
}

// readLoop reads lines until the input ends, handing valid messages to Read
// and answering the others itself.
func (c *stdioConn) readLoop(r io.Reader) {
	defer close(c.incoming)
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, tooLong, err := readLine(br, MaxStdioMessageBytes)
		switch {
		case tooLong:
			c.refuse(nil, jsonrpc.CodeInvalidRequest, "message longer than "+strconv.Itoa(MaxStdioMessageBytes)+" bytes")
		case len(bytes.TrimSpace(line)) > 0:
			msg, id, code, text := parseMessage(line)
			if msg == nil {
				c.refuse(id, code, text)
				break
			}
			select {
			case c.incoming <- msg:
			case <-c.closed:
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				c.readErr = err
			}
			return
		}
	}
}

// readLine reads one line (without its newline) of at most max bytes; a
// longer line is skipped to its end and reported as tooLong.
func readLine(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), tooLong, err
	}
}

// refuse writes a JSON-RPC error answer; id nil means null.
func (c *stdioConn) refuse(id json.RawMessage, code int64, text string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	c.log.Warn("refused a malformed MCP message", "code", code, "error", text)
	raw, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: text}})
	if err != nil {
		return
	}
	_ = c.writeLine(raw)
}

// parseMessage checks that line is one JSON-RPC 2.0 request, notification
// or response. When it is not, msg is nil and the answer is code and text,
// with id the message's id when it had a valid one.
func parseMessage(line []byte) (msg jsonrpc.Message, id json.RawMessage, code int64, text string) {
	line = bytes.TrimSpace(line)
	if !utf8.Valid(line) || !json.Valid(line) {
		return nil, nil, jsonrpc.CodeParseError, "parse error: the line is not valid JSON"
	}
	if depth(line) > maxJSONDepth {
		return nil, nil, jsonrpc.CodeInvalidRequest, "invalid request: nested deeper than " + strconv.Itoa(maxJSONDepth) + " levels"
	}
	switch line[0] {
	case '{':
	case '[':
		return nil, nil, jsonrpc.CodeInvalidRequest, "invalid request: batches are not supported; send one message per line"
	default:
		return nil, nil, jsonrpc.CodeInvalidRequest, "invalid request: a message is a JSON object"
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, nil, jsonrpc.CodeInvalidRequest, "invalid request: " + err.Error()
	}
	rawID, hasID := m["id"]
	if hasID {
		if !validID(rawID) {
			return nil, nil, jsonrpc.CodeInvalidRequest, "invalid request: id must be a string or an integer"
		}
		id = rawID
	}
	if v, ok := m["jsonrpc"]; !ok || string(v) != `"2.0"` {
		return nil, id, jsonrpc.CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`
	}
	if method, ok := m["method"]; ok {
		var s string
		if json.Unmarshal(method, &s) != nil || s == "" {
			return nil, id, jsonrpc.CodeInvalidRequest, `invalid request: "method" must be a non-empty string`
		}
		if p, ok := m["params"]; ok && p[0] != '{' && p[0] != '[' {
			return nil, id, jsonrpc.CodeInvalidRequest, `invalid request: "params" must be an object or an array`
		}
	} else {
		_, result := m["result"]
		_, rpcErr := m["error"]
		if !hasID || result == rpcErr {
			return nil, id, jsonrpc.CodeInvalidRequest, `invalid request: neither a request ("method") nor a response ("id" and one of "result", "error")`
		}
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return nil, id, jsonrpc.CodeInvalidRequest, "invalid request: " + err.Error()
	}
	return msg, nil, 0, ""
}

// validID: a JSON string, or an integer that fits int64 (no fraction, no
// exponent: 1e309 and 1.5 are refused, not rounded).
func validID(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	if raw[0] == '"' {
		var s string
		return json.Unmarshal(raw, &s) == nil
	}
	_, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil
}

// depth is the deepest nesting of arrays and objects in valid JSON.
func depth(b []byte) int {
	d, deepest, inString, escaped := 0, 0, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			d++
			deepest = max(deepest, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return deepest
}

// eofAnswerWait bounds how long the end of the input waits for the answers
// of the requests still being worked on (a take_task long poll waits up to
// 30 s).
const eofAnswerWait = 60 * time.Second

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case msg, ok := <-c.incoming:
		if !ok {
			c.awaitAnswers(ctx)
			if c.readErr != nil {
				return nil, c.readErr
			}
			return nil, io.EOF
		}
		if req, isReq := msg.(*jsonrpc.Request); isReq && req.ID.IsValid() {
			c.pendingMu.Lock()
			c.pending[req.ID.Raw()] = true
			c.pendingMu.Unlock()
		}
		return msg, nil
	}
}

// awaitAnswers waits until every request handed to Read has been answered,
// ctx ends, the connection is closed, or eofAnswerWait has passed.
func (c *stdioConn) awaitAnswers(ctx context.Context) {
	deadline := time.NewTimer(eofAnswerWait)
	defer deadline.Stop()
	for {
		c.pendingMu.Lock()
		n := len(c.pending)
		c.pendingMu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-c.answered:
		case <-ctx.Done():
			return
		case <-c.closed:
			return
		case <-deadline.C:
			c.log.Warn("mcp: input ended; not waiting longer for the answers of requests still running", "requests", n)
			return
		}
	}
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	raw, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	err = c.writeLine(raw)
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID.IsValid() {
		c.pendingMu.Lock()
		delete(c.pending, resp.ID.Raw())
		c.pendingMu.Unlock()
		select {
		case c.answered <- struct{}{}:
		default:
		}
	}
	return err
}

func (c *stdioConn) writeLine(raw []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.w.Write(append(raw, '\n'))
	return err
}

// Close stops handing messages to Read; the input is left to its owner.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

func (c *stdioConn) SessionID() string { return "" }
