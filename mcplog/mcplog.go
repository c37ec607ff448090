// Package mcplog owns the session-log format that hoist-mcp writes and the
// toolkit reads: a JSONL file whose first line is a Header and whose every
// other line is one line from the wire (hoist-mcp manual, "Log format").
//
// A wire line is stored as "message" (the JSON value exactly as it was sent,
// never re-encoded) when it is one JSON value in valid UTF-8, and as "raw"
// (the text, invalid UTF-8 replaced by U+FFFD) otherwise.
//
// The package also defines the lines of the logs hoist-mcp writes beside a
// session log, each once: the flow log's decisions and runs (FlowDecision,
// FlowRun, read by FlowReader).
package mcplog

import (
	"fmt"
	"os"
	"time"
)

// Version is the value of the header's hoist_mcp_log member.
const Version = 2

// Who sent a line ("from").
const (
	FromClient  = "client"  // the host
	FromServer  = "server"  // the MCP server
	FromProxy   = "proxy"   // the proxy itself, in active mode
	FromContext = "context" // a conversation line read from --context
)

// Header is the first line of a session log. Its members are marshalled in
// the manual's order; domain and agent_model are null when not given, and
// server_name is left out when not given.
type Header struct {
	Log           int      `json:"hoist_mcp_log"`
	Session       string   `json:"session"`
	StartedUnixMS int64    `json:"started_unix_ms"`
	ServerCommand []string `json:"server_command"`
	Domain        *string  `json:"domain"`
	AgentModel    *string  `json:"agent_model"`
	HostSession   string   `json:"host_session"`
	ServerName    string   `json:"server_name,omitempty"`
	// Upstream is the Streamable HTTP server's URL, without credentials,
	// when the proxy ran with --upstream (server_command is then empty).
	Upstream string `json:"upstream,omitempty"`
}

// SessionID names a session: the UTC start time to the millisecond and the
// proxy's process id, e.g. 20260923T212000.123Z-4242. It also names the
// log file, <session>.jsonl.
func SessionID(start time.Time, pid int) string {
	return start.UTC().Format("20060102T150405.000Z") + fmt.Sprintf("-%d", pid)
}

// HostSession returns the host session a proxy runs in: HOIST_SESSION when
// the environment sets it, else host-<parent pid>, which every server a host
// starts shares (manual, "Several servers").
func HostSession(getenv func(string) string) string {
	if s := getenv("HOIST_SESSION"); s != "" {
		return s
	}
	return fmt.Sprintf("host-%d", os.Getppid())
}

// StringOrNil returns nil for "" and &s otherwise, for the header's
// nullable members.
func StringOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
