package active

import (
	"encoding/json"
	"time"

	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/guards"
	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/judge"
	"github.com/hoist-mcp/hoist/mcpmsg"
	"github.com/hoist-mcp/hoist/oracle"
)

// Event is what the Machine handles: Request, *Held, *HeldBatch, Response,
// ListChanged, Stepped, Judged, Timeout, HostClosed, ServerClosed, Closing.
type Event interface{ event() }

// Request is a request of the host's the Machine learns from, about to be
// forwarded (it does not wait for the Machine): initialize or
// server/discover, tools/list, or a tools/call the proxy does not hold.
type Request struct {
	Method  string
	ID      string // raw
	Call    mcpmsg.Call
	Version string // its _meta's version, in the stateless era
	Retry   bool   // a call sent again with the input the server asked for
}

// Held is a tools/call of the host's that waits for the Machine's verdict
// before it is forwarded: a write the guards check, or hoist_commit.
type Held struct {
	Req  Request
	Line []byte // the whole line, without terminator: forwarded by the Machine once a judge lets it through
	// Heard are the conversation's lines the guards have not heard yet
	// (--context), read by the transport before the line was handed over.
	Heard [][]byte
}

// HeldBatch is a batch of the host's holding a call the Machine judges.
type HeldBatch struct {
	Line  []byte
	Parts []Part
	Heard [][]byte
}

// Part is one message of a held batch.
type Part struct {
	Req      Request
	Learn    bool // Req is set
	ID       json.RawMessage
	IsReq    bool // a request, which gets an answer
	ToolCall bool
	// Dropped is a write sent as a notification: never forwarded.
	Dropped bool
	// Odd is why a held call is refused before any rule reads it.
	Odd string
}

// Response is a response of the server's, before it is forwarded. A
// transport that awaits the verdict forwards the line only when Handle
// reports it was not taken.
type Response struct {
	Msg  jsonrpc.Message
	Line []byte // the whole line, terminator included
	// Own is true when the id was one of the proxy's in flight
	// (jsonrpc.IDs.Answered): a lookup's or a commit's call.
	Own bool
}

// ListChanged is the server's notifications/tools/list_changed, on its way
// to the host (it does not wait for the Machine).
type ListChanged struct{}

// Stepped is what a run's slow step found (Step): the conversation's new
// lines and the answers to the run's questions.
type Stepped struct {
	Step    uint64
	Said    [][]byte // for the session log
	Heard   [][]byte // for the flow session
	Q       *flow.Questions
	Answers []oracle.Answer
}

// Judged is the judge's verdict on a write it was asked about (Judge).
type Judged struct {
	J       *Judging
	Verdict judge.Verdict
}

// Timeout says the wait the last Timer started is over.
type Timeout struct{ ID string }

// HostClosed says the host has closed its side: a run in flight hands back
// what it found, no lookup is made any more, and a write the judge holds
// is answered with an error, unsent.
type HostClosed struct{}

// ServerClosed says the server's output has ended.
type ServerClosed struct{}

// Closing says the session ends: whatever is held is handed back or
// answered.
type Closing struct{}

func (Request) event()      {}
func (*Held) event()        {}
func (*HeldBatch) event()   {}
func (Response) event()     {}
func (ListChanged) event()  {}
func (Stepped) event()      {}
func (Judged) event()       {}
func (Timeout) event()      {}
func (HostClosed) event()   {}
func (ServerClosed) event() {}
func (Closing) event()      {}

// Action is what the Machine asks the proxy to do: ToHost, ToServer,
// Record, Log, Say, Step, CancelStep, Judge, Timer, StopTimer.
type Action interface{ action() }

// ToHost writes a whole line (terminator included) to the host; Own lines
// are the proxy's and are logged as proxy entries first.
type ToHost struct {
	Line []byte
	Own  bool
}

// ToServer writes a whole line (terminator included) to the server
// without the Machine waiting for the write; Own lines are the proxy's
// requests and are logged as proxy entries first.
type ToServer struct {
	Line []byte
	Own  bool
}

// Record logs a line of the conversation (--context) in the session log.
type Record struct{ Line []byte }

// LogKind names a side log.
type LogKind uint8

// The side logs.
const (
	FlowLog LogKind = iota
	GuardsLog
	ConfirmLog
)

// Log appends one JSON line to a side log.
type Log struct {
	To   LogKind
	Line []byte
}

// Say is a message for the proxy's stderr.
type Say struct{ Msg string }

// Step reads the conversation's new lines (Said for the session log,
// Heard for the flow session, when a --context file is read) and asks
// Questions (nil for none) under a context CancelStep ends; its result
// comes back as Stepped with the same ID.
type Step struct {
	ID        uint64
	Said      bool
	Heard     bool
	Questions *flow.Questions
}

// CancelStep ends a step's wait: its result is no longer wanted.
type CancelStep struct{ ID uint64 }

// Judge asks the confirmation judge about a write; the verdict comes back
// as Judged.
type Judge struct{ J *Judging }

// Judging is a write the judge is asked about.
type Judging struct {
	ID   json.RawMessage // the call's id, as in the guards log
	Call mcpmsg.Call
	Conf guards.Confirmation

	hold  *Held
	run   *commitRun
	rule  string
	words guards.Outcome
	start time.Time
}

// Timer starts the wait for a lookup's answer: after D, Timeout{ID}.
// Starting one replaces the last.
type Timer struct {
	ID string
	D  time.Duration
}

// StopTimer cancels the wait the last Timer started.
type StopTimer struct{}

func (ToHost) action()     {}
func (ToServer) action()   {}
func (Record) action()     {}
func (Log) action()        {}
func (Say) action()        {}
func (Step) action()       {}
func (CancelStep) action() {}
func (Judge) action()      {}
func (Timer) action()      {}
func (StopTimer) action()  {}
