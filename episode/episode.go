// Package episode is hoist's canonical Episode: one host session (or one
// τ²-bench simulation) as the tools its servers listed and the ordered events
// of the conversation, tool calls and their results, with the LLM turns they
// belong to. Session logs and τ²-bench results files both map onto it, and
// every analysis reads episodes through Source, never a log or the store.
package episode

import (
	"context"
	"encoding/json"
	"time"
)

// Kind is what a tool does to the world, from the server's readOnlyHint
// (hoist-mcp manual, "Reading logs"): true is Read, false is Write, and no
// hint is Generic, which means unknown.
type Kind string

// The kinds of tool.
const (
	Read    Kind = "read"
	Write   Kind = "write"
	Generic Kind = "generic"
)

// Actor says who made a call: the agent, or the proxy on its own (ids
// starting hoist-).
type Actor string

// The actors.
const (
	Agent Actor = "agent"
	Proxy Actor = "proxy"
)

// Source names where an episode came from.
const (
	SourceMCP  = "mcp"  // session logs recorded by hoist-mcp
	SourceTau2 = "tau2" // a τ²-bench results file
)

// Episode is one host session or one τ²-bench simulation.
type Episode struct {
	// ID is unique in a store: the session of the first log of a host
	// session, or "<results file base>#<simulation id>" for τ²-bench.
	ID          string
	Source      string
	Domain      string
	HostSession string
	// AgentModel is the model that drove the agent, when known (the log
	// header's agent_model, τ²-bench's agent); ClientName is the MCP client
	// that spoke to the server (initialize's clientInfo.name), which is not
	// the model.
	AgentModel string
	ClientName string
	// TaskID and Trial are known for τ²-bench (or from a .meta.json beside a
	// log); Reward is nil when unknown.
	TaskID  string
	Trial   int
	Reward  *float64
	Started time.Time
	Servers []Server
	Tools   []Tool
	// Events are in the order they happened (for merged logs: the order the
	// proxies read them).
	Events []Event
	// Turns are the LLM turns, in order; Turn.Index equals its position.
	Turns []Turn
}

// Server is one MCP server of the episode (one session log).
type Server struct {
	// Name qualifies the server's tools (server::tool) when an episode has
	// several servers: --server-name, else --domain, else initialize's name.
	Name string
	// Session is the log's session id; Path the log file, when from a log.
	Session string
	Path    string
	Command []string
	// Info is the initialize result's serverInfo, raw.
	Info json.RawMessage
}

// Tool is one tool as its server listed it.
type Tool struct {
	// Name is the name calls use in this episode: "tool", or "server::tool"
	// when tools are qualified by server.
	Name   string
	Server string
	Kind   Kind
	// InputSchema is the listed input contract, raw.
	InputSchema json.RawMessage
	// Annotations are the listed annotations, raw.
	Annotations json.RawMessage
}

// EventType says what an Event holds.
type EventType string

// The event types.
const (
	EventMessage EventType = "message" // a conversation line (user or assistant)
	EventCall    EventType = "call"    // a tools/call
	EventResult  EventType = "result"  // the first response to a tools/call
)

// Event is one thing that happened. Exactly one of Message, Call and Result
// is set, as Type says.
type Event struct {
	Type EventType
	// TMS is milliseconds since the episode started.
	TMS     int64
	Message *Message
	Call    *Call
	Result  *Result
}

// Message is a line of the conversation.
type Message struct {
	Role string // "user" or "assistant"
	Text string
}

// Call is one tools/call.
type Call struct {
	// Index is the call's position among the episode's calls.
	Index int
	// ID is the JSON-RPC id as sent (raw JSON text: `3`, `"hoist-1"`).
	ID     string
	Server string
	// Tool is the qualified name (see Tool.Name).
	Tool string
	Args json.RawMessage
	By   Actor
	// Turn is the index of the LLM turn the call belongs to.
	Turn int
	// Result is the call's result, nil when it was never answered.
	Result *Result
	// Cancelled is true for a call cancelled (notifications/cancelled), or
	// left unanswered when its log ended.
	Cancelled bool
	// Unreadable is true for a call whose answer is in its log but could
	// not be read (a damaged line): it was answered, so it does not hold
	// its turn open, but its result is unknown (Result is nil).
	Unreadable bool
}

// Result is the first response to a call.
type Result struct {
	CallIndex int
	// Text is the content's text items joined by newlines, or the error
	// message of a JSON-RPC error.
	Text string
	// IsError is true for a JSON-RPC error or a result with isError: true.
	IsError bool
	// Raw is the response message as it was sent.
	Raw json.RawMessage
}

// Turn is one LLM turn: the calls the agent made from one model response.
type Turn struct {
	Index int
	// Calls are indexes into the episode's calls, in order.
	Calls []int
	// StartMS and EndMS span the turn's first call to its last result.
	StartMS, EndMS int64
}

// AgentCalls returns the indexes of the turn's calls that the agent made,
// leaving out the proxy's lookups; calls are the episode's (Calls).
func (t Turn) AgentCalls(calls []*Call) []int {
	var agent []int
	for _, ci := range t.Calls {
		if ci >= 0 && ci < len(calls) && calls[ci].By != Proxy {
			agent = append(agent, ci)
		}
	}
	return agent
}

// Calls returns the episode's calls in order.
func (e *Episode) Calls() []*Call {
	var out []*Call
	for i := range e.Events {
		if c := e.Events[i].Call; c != nil {
			out = append(out, c)
		}
	}
	return out
}

// Tool returns the listed tool of that name, or nil.
func (e *Episode) Tool(name string) *Tool {
	for i := range e.Tools {
		if e.Tools[i].Name == name {
			return &e.Tools[i]
		}
	}
	return nil
}

// Filter selects episodes from a Source; zero fields match everything.
type Filter struct {
	Domain      string
	HostSession string
	Since       time.Time
	Until       time.Time
	IDs         []string
}

// Source yields episodes. Implementations are safe for concurrent use by
// several goroutines; each Episodes call streams its own results.
type Source interface {
	// Episodes calls fn with each matching episode, in start order, until fn
	// returns an error (which Episodes returns) or the episodes run out.
	Episodes(ctx context.Context, f Filter, fn func(*Episode) error) error
}
