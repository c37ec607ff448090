// Package active is the state machine of one session in active mode
// (DESIGN.md, "Active mode: one state machine"): everything hoist-mcp does
// beyond forwarding (flow lookups, the guards, the confirmation judge,
// hoist_commit) as handlers on one Machine. Events go in (a host request,
// a held write, a server response, what a slow step found, the judge's
// verdict, a timer, close) and actions come out (forward to the server,
// answer or hand back to the host, log, read the conversation and ask the
// model, ask the judge, start a timer). The package does no I/O: the proxy
// turns the transports' lines into events, runs every slow step off the
// Machine's goroutine under a cancellable context and hands its result
// back as an event, and carries out the actions.
//
// A Machine is owned by one goroutine: Handle, Start and Close must not be
// called concurrently. Screen, ScreenBatch, Holds and HoldsHost read only
// what New was given and may be called from any goroutine.
//
//	m, _ := active.New(cfg)
//	do(m.Start())
//	for ev := range events {
//		taken, acts := m.Handle(ev)
//		do(acts)      // in order: lines to the host before the verdict
//		reply(taken)  // to a transport that awaits it
//	}
package active

import (
	"context"
	"fmt"
	"time"

	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/guards"
	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/mcpmsg"
	"github.com/hoist-mcp/hoist/oracle"
)

// Config is what a Machine is made with; none of it changes after New.
type Config struct {
	// Server is --server-name, else --domain; "" waits for initialize's
	// serverInfo (or a stateless-era result's) to name it.
	Server string
	// Session names the session; it is the flow's fold when Flow.TaskID
	// is "".
	Session string
	// Flow, when not nil, is served (--flow).
	Flow *FlowConfig
	// Guards, when not nil, check the agent's writes (--guards).
	Guards *GuardsConfig
	// Commit adds hoist_commit (--commit).
	Commit bool
	// Limits, when not nil, limit the agent's calls (--limit, --max-calls).
	Limits *LimitsConfig
	// Pins, when not nil, are the tools' pinned definitions (--pin-tools).
	Pins *PinsConfig
	// Context is true when a --context file is read: each run's step reads
	// its new lines (Step.Said, Step.Heard).
	Context bool
	// IDs are the request ids in flight to the server, the host's and the
	// proxy's, shared with the transports (jsonrpc.IDs is safe for
	// concurrent use): the proxy's own ids never collide with the host's.
	IDs *jsonrpc.IDs
	// FlowLog, GuardsLog and ConfirmLog say which logs are kept: a Log
	// action is emitted only for a kept one.
	FlowLog, GuardsLog, ConfirmLog bool
	// Now is the clock of the measures logged (a check's duration, a
	// judged write's wait); nil is time.Now.
	Now func() time.Time
}

// FlowConfig serves a flow (manual, "Active mode").
type FlowConfig struct {
	Flow *flow.Flow
	Rule flow.Rule
	Caps flow.Caps
	// Tools, when not nil, are the only tools the flow may call.
	Tools []string
	// Shadow decides and logs, but looks nothing up.
	Shadow bool
	// Seed seeds the exploration draws when the rule explores; the flow
	// log names it, so that the session can be replayed.
	Seed uint64
	// TaskID picks the flow's fold; by default the session.
	TaskID string
	// Agent is the model that drives the agent (--agent-model): a flow
	// whose held-out counts are kept by model gates its offers by this
	// one's (flow.Options.Agent). "" is every model's.
	Agent string
	// LookupTimeout bounds the wait for one lookup's answer.
	LookupTimeout time.Duration
	// Oracle, when not nil, answers the flow's questions; they are asked
	// off the Machine (Step.Questions), within OracleTimeout.
	Oracle        oracle.Oracle
	OracleTimeout time.Duration
	// Context ends the questions a flow session would ask itself; the
	// Machine's are asked by the proxy (Step), under a context of its own.
	Context context.Context
}

// GuardsConfig checks the agent's writes against a domain's policy.
type GuardsConfig struct {
	Domain string
	Modes  map[string]guards.Mode
	// Judge, when not nil, puts each write a confirmation rule reads to
	// the model too (--confirm-judge); Enforce refuses a write it fails.
	Judge *JudgeConfig
}

// JudgeConfig is --confirm-judge.
type JudgeConfig struct {
	Enforce bool
	// Policy is the judge's policy and version (judge.Judge.Policy): a
	// verdict's approval must name it to let a write through.
	Policy string
}

// Machine is one session's active mode.
type Machine struct {
	cfg Config
	now func() time.Time
	// out collects the actions of the event being handled.
	out []Action

	fs       *flow.Session // nil until the server's name is known
	off      bool          // the flow serves nothing in this session
	gone     bool          // the server's output has ended
	hostGone bool          // the host has closed: no run starts, no lookup is made
	closed   bool
	version  string // the stateless era's version the host's requests name, "" in the session era
	calls    map[string]int
	keys     map[int]string
	waiting  map[string]int
	lists    map[string]bool
	inits    map[string]bool
	run      *running
	pending  map[string]lookupCall // the proxy's lookups awaiting an answer, by raw id
	timerID  string                // whose wait the timer is, "" when none
	n        uint64
	steps    uint64
	seed     *uint64

	gd     *guardsState
	commit *commitState
	lim    *limitState // nil without --limit and --max-calls
	pins   *pinState   // nil without --pin-tools
	// judging are the agent's writes the judge holds, by raw id: each
	// waits for its own verdict, and nothing else waits for it.
	judging map[string]*Held
}

// lookupCall is one of the proxy's lookups, awaiting its answer.
type lookupCall struct {
	tool string
	args []byte
}

// New makes a session's Machine.
func New(c Config) (*Machine, error) {
	if c.IDs == nil {
		c.IDs = jsonrpc.NewIDs()
	}
	m := &Machine{cfg: c, now: c.Now,
		calls: map[string]int{}, keys: map[int]string{}, waiting: map[string]int{},
		lists: map[string]bool{}, inits: map[string]bool{}, pending: map[string]lookupCall{},
		judging: map[string]*Held{}}
	if m.now == nil {
		m.now = time.Now
	}
	if c.Flow != nil && c.Flow.LookupTimeout <= 0 {
		m.cfg.Flow.LookupTimeout = DefaultLookupTimeout
	}
	if c.Commit {
		m.commit = &commitState{}
	}
	if c.Limits != nil {
		lim, err := newLimits(*c.Limits)
		if err != nil {
			return nil, err
		}
		m.lim = lim
	}
	if c.Pins != nil {
		m.pins = newPins(*c.Pins)
	}
	if c.Guards != nil {
		s, err := guards.NewSession(guards.Config{Domain: c.Guards.Domain, Modes: c.Guards.Modes})
		if err != nil {
			return nil, fmt.Errorf("--guards: %w", err)
		}
		g := &guardsState{writes: map[string]bool{}, s: s, calls: map[string]mcpmsg.Call{}, judge: c.Guards.Judge}
		for _, w := range guards.Writes(c.Guards.Domain) {
			g.writes[w] = true
		}
		m.gd = g
	}
	return m, nil
}

// DefaultLookupTimeout is how long a run waits for the answer to one of its
// lookups before it hands back to the agent.
const DefaultLookupTimeout = 30 * time.Second

// Start makes the flow session when the server's name is known already.
func (m *Machine) Start() []Action {
	if m.cfg.Server != "" {
		m.startSession("")
	}
	return m.flush()
}

// Handle handles one event, and returns the verdict of an event a
// transport awaits one for (Held, HeldBatch, Response: true when the
// proxy took the line over) and the actions to carry out, in order.
func (m *Machine) Handle(ev Event) (taken bool, acts []Action) {
	switch ev := ev.(type) {
	case Request:
		m.onHost(ev)
	case *Held:
		taken = m.onHold(ev)
	case *HeldBatch:
		taken = m.onBatch(ev)
	case Response:
		taken = m.onServer(ev)
		if m.gd != nil && !taken {
			m.learn(ev.Msg) // what the agent sees becomes the guards' facts
		}
	case ListChanged:
		m.onListChanged()
	case Stepped:
		m.onStep(ev)
	case Judged:
		m.onJudged(ev)
	case Timeout:
		if ev.ID == m.timerID && ev.ID != "" {
			m.say("flow: the MCP server did not answer %s within %v; handing back to the agent", ev.ID, m.cfg.Flow.LookupTimeout)
			delete(m.pending, ev.ID)
			m.timerID = ""
			m.finish()
		}
	case HostClosed:
		m.hostGone = true
		if m.cfg.Flow == nil || !m.cfg.Flow.Shadow {
			m.finish() // a shadow run makes no lookup: it ends by itself
		}
		m.unjudge("the host closed the session")
		m.dropParked("the host closed the session")
	case ServerClosed:
		m.gone = true
		m.finish()
		m.endCommits()
		m.dropParked("the MCP server closed")
	case Closing:
		m.closed = true
		m.finish()
		m.unjudge("the session ended")
		m.dropParked("the session ended")
	}
	return taken, m.flush()
}

func (m *Machine) flush() []Action {
	out := m.out
	m.out = nil
	return out
}

// emit adds an action. A lookup of the flow's passes the pinned tools
// first (pinLookup): the flow asks the server only what the agent may.
func (m *Machine) emit(a Action) {
	if ts, ok := a.(ToServer); ok && ts.Own && m.pinLookup(ts) {
		return
	}
	m.out = append(m.out, a)
}

func (m *Machine) say(format string, args ...any) { m.emit(Say{Msg: fmt.Sprintf(format, args...)}) }

// answer sends the host a line of the proxy's own, logged as the proxy's.
func (m *Machine) answer(line []byte) { m.emit(ToHost{Line: append(line, '\n'), Own: true}) }
