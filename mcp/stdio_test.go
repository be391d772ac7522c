package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workgraph-dev/workgraph/client"
)

// stdioPeer is an MCP client speaking raw lines to a Server on the stdio
// transport.
type stdioPeer struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Scanner
	done chan error
}

func startStdio(t *testing.T, s *Server, transport func(io.Reader, io.Writer) sdk.Transport) *stdioPeer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &stdioPeer{t: t, in: inW, out: bufio.NewScanner(outR), done: make(chan error, 1)}
	p.out.Buffer(nil, 1<<20)
	go func() {
		p.done <- s.Serve(context.Background(), transport(inR, outW))
		outW.Close()
	}()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	return p
}

func (p *stdioPeer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatalf("writing %q: the server stopped reading: %v", line, err)
	}
}

// reply reads the next answer (skipping server notifications).
func (p *stdioPeer) reply() map[string]json.RawMessage {
	p.t.Helper()
	lines := make(chan string, 1)
	go func() {
		if p.out.Scan() {
			lines <- p.out.Text()
		}
		close(lines)
	}()
	select {
	case l, ok := <-lines:
		if !ok {
			p.t.Fatal("the server closed its output: the session ended")
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			p.t.Fatalf("answer %q: %v", l, err)
		}
		if _, isCall := m["method"]; isCall {
			return p.reply()
		}
		return m
	case <-time.After(10 * time.Second):
		p.t.Fatal("no answer within 10 s")
	}
	return nil
}

func (p *stdioPeer) call(id int, method, params string) map[string]json.RawMessage {
	p.t.Helper()
	p.send(`{"jsonrpc":"2.0","id":` + strings.TrimSpace(jsonInt(id)) + `,"method":"` + method + `","params":` + params + `}`)
	r := p.reply()
	if string(r["id"]) != jsonInt(id) || r["error"] != nil {
		p.t.Fatalf("%s: answer %v", method, r)
	}
	return r
}

func jsonInt(i int) string { b, _ := json.Marshal(i); return string(b) }

func stdioTransport(r io.Reader, w io.Writer) sdk.Transport {
	return &StdioTransport{Reader: r, Writer: w}
}

// TestStdioMalformedLines: every kind of malformed line the probe sent
// answers a JSON-RPC error, with the request's id when it had a valid one,
// and the session goes on holding its task; a valid call works after each.
func TestStdioMalformedLines(t *testing.T) {
	t.Parallel()
	testMalformedLines(t, stdioTransport)
}

func testMalformedLines(t *testing.T, transport func(io.Reader, io.Writer) sdk.Transport) {
	e := setup(t)
	it := e.item(t, "hold me")
	p := startStdio(t, e.mcpServer(t, Config{}), transport)
	p.call(1, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}`)
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	p.call(2, "tools/call", `{"name":"take_task","arguments":{}}`)
	if st := e.get(t, it.ID).State; st != client.StateLeased {
		t.Fatalf("after take_task: state %q", st)
	}

	deep := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	tests := []struct {
		name, line string
		code       int
		id         string
	}{
		{"Truncated", `{"jsonrpc":"2.0","id":3,"method":"tools/li`, -32700, "null"},
		{"NotJSON", `hello`, -32700, "null"},
		{"ControlBytes", "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\x01\"}", -32700, "null"},
		{"ControlBytesOutside", "\x00{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}", -32700, "null"},
		{"InvalidUTF8", "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\xff\"}", -32700, "null"},
		{"EmptyArray", `[]`, -32600, "null"},
		{"Batch", `[{"jsonrpc":"2.0","id":3,"method":"ping"}]`, -32600, "null"},
		{"Null", `null`, -32600, "null"},
		{"Number", `123`, -32600, "null"},
		{"String", `"ping"`, -32600, "null"},
		{"True", `true`, -32600, "null"},
		{"EmptyObject", `{}`, -32600, "null"},
		{"NoVersion", `{"id":4,"method":"ping"}`, -32600, "4"},
		{"WrongVersion", `{"jsonrpc":"1.0","id":5,"method":"ping"}`, -32600, "5"},
		{"NumericVersion", `{"jsonrpc":2.0,"id":6,"method":"ping"}`, -32600, "6"},
		{"ObjectID", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600, "null"},
		{"ArrayID", `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, -32600, "null"},
		{"HugeID", `{"jsonrpc":"2.0","id":1e309,"method":"ping"}`, -32600, "null"},
		{"FractionID", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, -32600, "null"},
		{"BoolID", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, -32600, "null"},
		{"NullID", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, -32600, "null"},
		{"NumericMethod", `{"jsonrpc":"2.0","id":7,"method":42}`, -32600, "7"},
		{"EmptyMethod", `{"jsonrpc":"2.0","id":8,"method":""}`, -32600, "8"},
		{"ScalarParams", `{"jsonrpc":"2.0","id":9,"method":"ping","params":"x"}`, -32600, "9"},
		{"NoMethodNoResult", `{"jsonrpc":"2.0","id":10}`, -32600, "10"},
		{"DeepNesting", `{"jsonrpc":"2.0","id":11,"method":"ping","params":{"a":` + deep + `}}`, -32600, "null"},
		{"DeepNestingInvalid", deep[:9000], -32700, "null"},
	}
	next := 100
	for _, tc := range tests {
		p.send(tc.line)
		r := p.reply()
		var rpcErr struct {
			Code int `json:"code"`
		}
		if err := json.Unmarshal(r["error"], &rpcErr); err != nil || rpcErr.Code != tc.code || string(r["id"]) != tc.id {
			t.Errorf("%s: answer %s, want error %d with id %s", tc.name, mapString(r), tc.code, tc.id)
		}
		// The session still answers, and still holds the task.
		next++
		p.call(next, "tools/list", `{}`)
	}
	if st := e.get(t, it.ID).State; st != client.StateLeased {
		t.Fatalf("after the malformed lines: state %q, want leased (the session's task was released)", st)
	}
	next++
	r := p.call(next, "tools/call", `{"name":"finish_task","arguments":{"result":{"ok":true}}}`)
	if strings.Contains(string(r["result"]), `"isError":true`) {
		t.Fatalf("finish_task after the malformed lines: %s", r["result"])
	}
	if st := e.get(t, it.ID).State; st != client.StateDone {
		t.Fatalf("after finish_task: state %q, want done", st)
	}
}

func mapString(m map[string]json.RawMessage) string {
	b, _ := json.Marshal(m)
	return string(b)
}
