package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	machine "github.com/hoist-mcp/hoist/active"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// FlowOptions serve a flow after the agent's calls (hoist-mcp --flow and the
// flags under it; manual, "Active mode").
type FlowOptions struct {
	Flow *flow.Flow
	Rule flow.Rule
	Caps flow.Caps
	// Tools, when not nil, are the only tools the flow may call.
	Tools []string
	// Log is the flow log's path ({session} stands for the session); ""
	// means <session>.flow.jsonl beside the session log, or none.
	Log string
	// Shadow decides and logs, but looks nothing up.
	Shadow bool
	// Seed seeds the exploration draws when SeedSet; otherwise each
	// session draws a seed of its own, which its flow log names, so that
	// sessions explore differently and each can be replayed.
	Seed    uint64
	SeedSet bool
	// TaskID picks the flow's fold; by default the session.
	TaskID string
	// Agent is the model that drives the agent (--agent-model), whose
	// held-out counts gate the flow's offers when it has them by model.
	Agent string
	// LookupTimeout bounds the wait for the answer to one lookup; the run
	// hands back to the agent when it passes.
	LookupTimeout time.Duration
	// Oracle, when set, answers the flow's questions (ask.go).
	Oracle FlowOracle
}

// DefaultLookupTimeout is how long a run waits for the answer to one of its
// lookups before it hands back to the agent.
const DefaultLookupTimeout = machine.DefaultLookupTimeout

// active is the adapter between a session's transports and its state
// machine (package active; manual, "Active mode"): it turns the lines that
// cross the proxy into the Machine's events, and carries out the actions
// the Machine returns. One goroutine, loop, owns the Machine: the
// transports only send it events, and every slow step (the model's
// questions, the judge's, the reads of the --context file) runs elsewhere
// under a cancellable context and comes back as an event, so that only
// the line a step decides about waits for it (issue 23). fromHost enqueues
// what the host asked and returns; fromServer hands the owner a server
// response and waits for its verdict (take the line over, or forward it),
// so that lines the Machine does not act on keep their order.
type active struct {
	// Set before start; read-only after.
	opts    FlowOptions
	server  string // --server-name, else --domain; else initialize's name
	rec     *mcplog.Writer
	flowLog *mcplog.Writer
	context *contextTail // --context: read before each decision
	// said reads the --context file again, on its own offset, for the flow
	// session: the pump's reads before each tools/call log lines the
	// session must hear too. Owned by loop.
	said     *contextTail
	say      func(string, ...any)
	session  string
	toServer func(line []byte) // one whole line, terminator included; may block
	toHost   func(line []byte) // one whole line, terminator included
	// observe, when set, is shown the actions of each step before they
	// are carried out (--otel: telemetry.go).
	observe func([]machine.Action)
	// newTimer starts the wait for a lookup's answer: a channel that
	// receives when it is over, and the function that cancels it (tests
	// replace it to end a wait when they choose).
	newTimer func(time.Duration) (<-chan time.Time, func())

	// ids are the request ids in flight to the server, the host's and the
	// proxy's: answers are routed by them, never by an id's shape, and no
	// id is in flight for both at once (issue 23, point 3).
	ids *jsonrpc.IDs

	// m is the session's state machine, made by setUpActive or start;
	// owned by loop, but for its Screen methods, which read only its
	// configuration.
	m *machine.Machine
	// guards, commit, limits, pins: --guards, --commit, --limit or
	// --max-calls, --pin-tools are on (setUpActive).
	guards *GuardsOptions
	commit bool
	limits *LimitsOptions
	pins   *PinsOptions
	gd     *guardsLogs // nil without --guards
	// rewrites are the ids of the host's initialize, server/discover and
	// tools/list requests with --commit, whose answers the owner rewrites:
	// stored by the host's reader, taken by the server's (needsNoVerdict).
	rewrites sync.Map

	events  chan envelope
	quit    chan struct{} // closed by close: the loop hands back and returns
	done    chan struct{} // closed when the loop has returned
	sends   sync.WaitGroup
	started bool
	closing sync.Once
	// ctx ends the slow steps in flight (the flow's questions, its reads
	// of the conversation) when the host has gone or the session closes.
	ctx    context.Context
	cancel context.CancelFunc

	// inflight are the host's requests forwarded and not yet answered, by
	// raw id: when the server's output ends, each gets an error (issue
	// 23, point 5). Noted by the host's reader, taken off by the server's
	// and by the owner's answers.
	inflightMu sync.Mutex
	inflight   map[string]bool

	// Owned by loop.
	hostGone bool             // the host closed its side: it waits for no answer
	timer    <-chan time.Time // the wait for the pending lookup, nil when none
	stop     func()           // cancels timer
	timerID  string           // whose wait timer is
	steps    map[uint64]context.CancelFunc
}

// envelope is one event for the owner, and where its verdict goes when a
// transport awaits one.
type envelope struct {
	ev    machine.Event
	taken chan bool
}

// eventBuffer is how many events may wait for the owner before a transport
// sending one waits: enough that the host's lines never wait in practice.
const eventBuffer = 256

func newActive(o FlowOptions, server string, say func(string, ...any)) *active {
	if o.LookupTimeout <= 0 {
		o.LookupTimeout = DefaultLookupTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &active{
		ctx:      ctx,
		cancel:   cancel,
		opts:     o,
		server:   server,
		say:      say,
		newTimer: realTimer,
		ids:      jsonrpc.NewIDs(),
		events:   make(chan envelope, eventBuffer),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		steps:    map[uint64]context.CancelFunc{},
		inflight: map[string]bool{},
	}
}

func realTimer(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}

// build makes the session's Machine from what the adapter was given.
func (a *active) build() error {
	c := machine.Config{
		Server:  a.server,
		Session: a.session,
		Commit:  a.commit,
		Limits:  a.limits,
		Pins:    a.pins,
		Context: a.context != nil,
		IDs:     a.ids,
		FlowLog: a.flowLog != nil || a.observe != nil,
	}
	if f := a.opts.Flow; f != nil {
		seed := a.opts.Seed
		if !a.opts.SeedSet {
			seed = rand.Uint64()
		}
		c.Flow = &machine.FlowConfig{Flow: f, Rule: a.opts.Rule, Caps: a.opts.Caps, Tools: a.opts.Tools, Shadow: a.opts.Shadow,
			Seed: seed, TaskID: a.opts.TaskID, Agent: a.opts.Agent, LookupTimeout: a.opts.LookupTimeout,
			Oracle: a.opts.Oracle.Oracle, OracleTimeout: a.opts.Oracle.Timeout, Context: a.ctx}
	}
	if g := a.guards; g != nil {
		c.Guards = &machine.GuardsConfig{Domain: g.Domain, Modes: g.Modes}
		if g.Judge != nil {
			c.Guards.Judge = &machine.JudgeConfig{Enforce: g.Judge.Enforce, Policy: g.Judge.Judge.Policy()}
		}
		c.ConfirmLog = a.gd != nil && a.gd.jd != nil && (a.gd.jd.log != nil || a.observe != nil)
	}
	// The guards' checks and the limits' refusals (setUpActive).
	c.GuardsLog = a.gd != nil && (a.gd.log != nil || a.observe != nil)
	m, err := machine.New(c)
	if err != nil {
		return err
	}
	a.m = m
	return nil
}

// start starts the owner. toHost and toServer must be set.
func (a *active) start() {
	if a.m == nil {
		if err := a.build(); err != nil {
			a.say("%v", err)
			a.guards = nil
			a.build()
		}
	}
	a.started = true
	go a.loop()
}

// fromHost learns what the host asks (line without terminator): initialize
// or server/discover, tools/list and the agent's tools/call. It does not
// wait for the owner.
func (a *active) fromHost(line []byte) {
	v := mcpmsg.ReadView(line)
	a.hostIDs(v)
	if ev, ok := machine.RequestOf(v); ok {
		a.send(envelope{ev: ev})
	}
}

// hostIDs notes the ids of the host's requests in v, about to be
// forwarded; a request whose id a request of the proxy's has in flight
// waits here until that one is answered, so that the two are never in
// flight at once.
func (a *active) hostIDs(v mcpmsg.View) {
	if v.Kind == jsonrpc.Request {
		a.ids.Host(v.ID, a.done)
		a.track(v.ID, true)
	}
	for _, p := range v.Parts {
		if p.Kind == jsonrpc.Request {
			a.ids.Host(p.ID, a.done)
			a.track(p.ID, true)
		}
	}
}

// track notes a host request in flight (on), or its answer.
func (a *active) track(id []byte, on bool) {
	a.inflightMu.Lock()
	defer a.inflightMu.Unlock()
	if on {
		a.inflight[string(id)] = true
	} else {
		delete(a.inflight, string(id))
	}
}

// answered takes the host's requests a line to the host (terminator
// included) answers off the requests in flight.
func (a *active) answered(line []byte) {
	body := jsonrpc.TrimLine(line)
	m := jsonrpc.Classify(body)
	switch m.Kind {
	case jsonrpc.Response:
		a.track(m.ID, false)
	case jsonrpc.Batch:
		for _, p := range mcpmsg.ReadView(body).Parts {
			if p.Kind == jsonrpc.Response {
				a.track(p.ID, false)
			}
		}
	}
}

// unanswered answers each host request still in flight once the server's
// output has ended while the host was still there, with a JSON-RPC error
// logged as the proxy's: no answer can come any more, and the host must
// not wait for one. A host that closed first waits for nothing, and gets
// only what the server still wrote.
func (a *active) unanswered() {
	a.inflightMu.Lock()
	ids := make([]string, 0, len(a.inflight))
	for id := range a.inflight {
		ids = append(ids, id)
	}
	clear(a.inflight)
	a.inflightMu.Unlock()
	if len(ids) == 0 {
		return
	}
	slices.Sort(ids)
	for _, id := range ids {
		a.answer(mcpmsg.AppendError(nil, json.RawMessage(id), machine.ErrSessionEnded, "the MCP server closed before it answered this request"))
	}
	a.say("%d request(s) of the host were in flight when the MCP server closed; each was answered with an error", len(ids))
}

// send hands the owner an event without waiting for it.
func (a *active) send(e envelope) {
	select {
	case a.events <- e:
	case <-a.done:
	}
}

// fromServer looks at a whole server line (terminator included) before it
// is forwarded, and reports whether the owner took it over: the answer to
// a request of the proxy's own, or the agent's answer held while the flow
// runs. Lines that are not responses pass at once.
func (a *active) fromServer(line []byte) bool {
	m := jsonrpc.Classify(jsonrpc.TrimLine(line))
	if m.Kind == jsonrpc.Batch {
		a.answered(line)
	}
	if m.Kind == jsonrpc.Notification && a.pins != nil && string(m.Method) == machine.MethodToolsListChanged {
		a.send(envelope{ev: machine.ListChanged{}}) // passed on; the owner checks the tools again
		return false
	}
	if m.Kind != jsonrpc.Response || !m.HasID() {
		return false
	}
	own := a.ids.Answered(m.ID)
	if !own {
		a.track(m.ID, false)
	}
	if !own && a.needsNoVerdict(m) {
		a.send(envelope{ev: machine.Response{Msg: m, Line: line}}) // the guards learn from it, in order
		return false
	}
	e := envelope{ev: machine.Response{Msg: m, Line: line, Own: own}, taken: make(chan bool, 1)}
	return a.ask(e, own) // when the owner is over, the proxy's own answers still never reach the host
}

// ask hands the owner e, whose verdict comes on e.taken, and waits for it;
// over is the verdict when the owner has stopped without giving one.
func (a *active) ask(e envelope, over bool) bool {
	select {
	case a.events <- e:
	case <-a.done:
		return over
	}
	select {
	case t := <-e.taken:
		return t
	case <-a.done:
		// The owner replies before it returns to its events, so a verdict
		// is there if the event was handled; else it never will be.
		select {
		case t := <-e.taken:
			return t
		default:
			return over
		}
	}
}

// serverDone tells the owner that the server's output has ended: a run in
// flight hands back what it found.
func (a *active) serverDone() { a.send(envelope{ev: machine.ServerClosed{}}) }

// hostDone tells the owner that the host has closed its side: a run in
// flight hands back what it found, its questions are cancelled, no lookup
// is made any more, and a write the judge holds is answered with an error,
// unsent (issue 23, point 5).
func (a *active) hostDone() { a.send(envelope{ev: machine.HostClosed{}}) }

// offload runs a slow step off the owner's goroutine, under ctx, and hands
// its result back to the owner as an event. A result that comes after the
// owner has returned is dropped.
func (a *active) offload(ctx context.Context, step func(context.Context) machine.Event) {
	a.sends.Add(1)
	go func() {
		defer a.sends.Done()
		a.send(envelope{ev: step(ctx)})
	}()
}

// forward sends a whole line to the server for the owner, which must not
// wait for the write.
func (a *active) forward(line []byte) {
	a.sends.Add(1)
	go func() {
		defer a.sends.Done()
		a.toServer(line)
	}()
}

// close hands back whatever the Machine holds, stops the owner, waits for
// the requests it was sending, and closes the side logs. It is idempotent;
// the logs' errors are returned once.
func (a *active) close() error {
	var err error
	a.closing.Do(func() {
		if a.started {
			close(a.quit)
			<-a.done
		}
		a.cancel()      // the flow's questions in flight would hold up the wait
		a.cancelJudge() // and so would the judge's
		a.sends.Wait()
		if a.flowLog != nil {
			err = a.flowLog.Close()
		}
		err = errors.Join(err, a.closeGuards())
	})
	return err
}

// loop is the owner: it hands the Machine events one at a time until
// close.
func (a *active) loop() {
	defer close(a.done)
	a.apply(a.m.Start())
	for {
		select {
		case e := <-a.events:
			a.handle(e)
		case <-a.timer: // nil, and never ready, when no lookup waits
			id := a.timerID
			a.timer, a.stop, a.timerID = nil, nil, ""
			a.handle(envelope{ev: machine.Timeout{ID: id}})
		case <-a.quit:
			a.drain()
			a.handle(envelope{ev: machine.Closing{}})
			for id, stop := range a.steps {
				stop()
				delete(a.steps, id)
			}
			return
		}
	}
}

// drain handles the events already queued when close was called, so that
// a response whose verdict a transport awaits gets one.
func (a *active) drain() {
	for {
		select {
		case e := <-a.events:
			a.handle(e)
		default:
			return
		}
	}
}

// handle hands the Machine one event, carries out its actions, and then
// gives the transport that awaits it the verdict: a line the owner hands
// the host goes before the line the transport forwards.
func (a *active) handle(e envelope) {
	taken, acts := a.m.Handle(e.ev)
	a.apply(acts)
	if e.taken != nil {
		e.taken <- taken
	}
	switch e.ev.(type) {
	case machine.HostClosed:
		a.hostGone = true
	case machine.ServerClosed:
		if !a.hostGone {
			a.unanswered() // after what the Machine handed back
		}
	}
}

// apply carries out the Machine's actions, in order, without waiting on
// the server: its writes and the slow steps run on goroutines of their
// own.
func (a *active) apply(acts []machine.Action) {
	if a.observe != nil {
		a.observe(acts)
	}
	for _, act := range acts {
		switch x := act.(type) {
		case machine.ToHost:
			if x.Own {
				if a.rec != nil {
					a.rec.Record(mcplog.FromProxy, bytes.Clone(jsonrpc.TrimLine(x.Line)))
				}
				a.answered(x.Line)
			}
			a.toHost(x.Line)
		case machine.ToServer:
			if x.Own && a.rec != nil {
				a.rec.Record(mcplog.FromProxy, bytes.Clone(jsonrpc.TrimLine(x.Line)))
			}
			a.forward(x.Line)
		case machine.Record:
			if a.rec != nil {
				a.rec.Record(mcplog.FromContext, x.Line)
			}
		case machine.Log:
			a.appendLog(x)
		case machine.Say:
			a.say("%s", x.Msg)
		case machine.Step:
			a.step(x)
		case machine.CancelStep:
			if stop := a.steps[x.ID]; stop != nil {
				stop()
				delete(a.steps, x.ID)
			}
		case machine.Judge:
			a.startJudge(x.J)
		case machine.Timer:
			if a.stop != nil {
				a.stop()
			}
			a.timer, a.stop = a.newTimer(x.D)
			a.timerID = x.ID
		case machine.StopTimer:
			if a.stop != nil {
				a.stop()
			}
			a.timer, a.stop, a.timerID = nil, nil, ""
		}
	}
}

// appendLog appends a line to one of the side logs.
func (a *active) appendLog(l machine.Log) {
	var w *mcplog.Writer
	switch {
	case l.To == machine.FlowLog:
		w = a.flowLog
	case l.To == machine.GuardsLog && a.gd != nil:
		w = a.gd.log
	case l.To == machine.ConfirmLog && a.gd != nil && a.gd.jd != nil:
		w = a.gd.jd.log
	}
	if w != nil {
		w.Append(l.Line)
	}
}

// step runs a run's slow step off the owner: the conversation's new lines
// read (said for the session log, heard for the flow session) and the
// questions asked, under a context that CancelStep, the host's leaving or
// the session's close ends.
func (a *active) step(s machine.Step) {
	ctx, stop := context.WithCancel(a.ctx)
	a.steps[s.ID] = stop
	var said, heard *contextTail
	if s.Said {
		said = a.context
	}
	if s.Heard && a.context != nil {
		if a.said == nil {
			a.said = &contextTail{path: a.context.path}
		}
		heard = a.said
	}
	q := s.Questions
	a.offload(ctx, func(ctx context.Context) machine.Event {
		ev := machine.Stepped{Step: s.ID, Q: q}
		if said != nil {
			ev.Said = said.read()
		}
		if heard != nil {
			ev.Heard = heard.read()
		}
		if q != nil {
			ev.Answers = q.Ask(ctx)
		}
		return ev
	})
}

// openFlowLog opens a session's flow log: --flow-log FILE ({session}
// standing for the session), appended to, since sessions may share it;
// else <session>.flow.jsonl beside the session log, made new; else none.
func openFlowLog(flag string, rec *mcplog.Writer, session string) (*mcplog.Writer, error) {
	return openSideLog(flag, rec, session, ".flow.jsonl", "flow log")
}

// openSideLog opens a log kept beside a session's: flag ({session} standing
// for the session), appended to, since sessions may share it; else the
// session log's name with suffix for .jsonl, made new; else none. what
// names the log in an error.
func openSideLog(flag string, rec *mcplog.Writer, session, suffix, what string) (*mcplog.Writer, error) {
	var w *mcplog.Writer
	var err error
	switch {
	case flag != "":
		w, err = mcplog.AppendJSONL(SessionPath(flag, session))
	case rec != nil:
		w, err = mcplog.CreateJSONL(strings.TrimSuffix(rec.Path(), ".jsonl") + suffix)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return w, nil
}

// lineGate serializes whole lines to the server: the host's lines, which
// the pump writes in pieces, and the proxy's own requests, which must never
// land inside one of them.
type lineGate struct {
	mu   sync.Mutex
	w    io.Writer
	held bool // the pump is inside a line
}

// Write is the pump's: the gate stays shut from a line's first piece to its
// last.
func (g *lineGate) Write(p []byte) (int, error) {
	if !g.held {
		g.mu.Lock()
		g.held = true
	}
	n, err := g.w.Write(p)
	if len(p) > 0 && p[len(p)-1] == '\n' || err != nil {
		g.held = false
		g.mu.Unlock()
	}
	return n, err
}

// release opens the gate after the pump stopped inside a line.
func (g *lineGate) release() {
	if g.held {
		g.held = false
		g.mu.Unlock()
	}
}

// writeLine writes one whole line of the proxy's own.
func (g *lineGate) writeLine(line []byte) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, err := g.w.Write(line)
	return err
}
