// Package mcp serves workgraph to AI agents over the Model Context Protocol
// (github.com/modelcontextprotocol/go-sdk), on stdio or streamable HTTP.
//
// It owns the agent-facing tool list (take a task, report progress, finish,
// release, fail, split, ask a person, create tasks and dependencies, show and
// list tasks) and the per-session lease: the MCP session holds the lease id
// and epoch of the task it took, presents them on every worker call and keeps
// the lease alive with a background heartbeat. The agent never sees or passes
// the fence, so it can neither forget nor forge it. When the server refuses
// the fence (the lease expired or was taken over) the tool answers with an
// error telling the agent to stop working on the task.
//
// The package talks to a workgraph server through the Go client (package
// client); it holds no state beyond its sessions.
package mcp
