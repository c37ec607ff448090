package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
	"github.com/hoist-mcp/hoist/oracle"
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
	// LookupTimeout bounds the wait for the answer to one lookup; the run
	// hands back to the agent when it passes.
	LookupTimeout time.Duration
	// Oracle, when set, answers the flow's questions (ask.go).
	Oracle FlowOracle
}

// DefaultLookupTimeout is how long a run waits for the answer to one of its
// lookups before it hands back to the agent.
const DefaultLookupTimeout = 30 * time.Second

// active serves a flow in one session (manual, "Active mode": the proxy
// reads what crosses it on one thread and acts on it). It learns the
// agent's calls from the host's lines, holds the server's answer to a call
// while the flow runs at its site, makes the lookups the flow takes as
// requests of its own (ids hoist-<n>), and hands the answer back with their
// results appended. One run at a time: an answer that arrives meanwhile is
// forwarded as it is.
//
// One goroutine, loop, owns the flow session and every field under "owned
// by loop": the transports only send it events, and every slow step (the
// model's questions, the judge's, the reads of the --context file) runs
// elsewhere under a cancellable context and comes back as an event, so
// that only the line a step decides about waits for it (issue 23). fromHost enqueues what the
// host asked and returns; fromServer hands the owner a server response and
// waits for its verdict (take the line over, or forward it), so that lines
// the flow does not act on keep their order. The proxy's own requests wait
// in a pending map keyed by id, as go-sdk's jsonrpc2 keeps its calls: an
// answer that comes after its lookup timed out finds no entry and is
// dropped, never taken for the next lookup's.
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
	// newTimer starts the wait for a lookup's answer: a channel that
	// receives when it is over, and the function that cancels it (tests
	// replace it to end a wait when they choose).
	newTimer func(time.Duration) (<-chan time.Time, func())

	// ids are the request ids in flight to the server, the host's and the
	// proxy's: answers are routed by them, never by an id's shape, and no
	// id is in flight for both at once (issue 23, point 3).
	ids *jsonrpc.IDs

	events  chan any      // hostEvent, serverEvent, endEvent, stepEvent, ...
	quit    chan struct{} // closed by close: the loop hands back and returns
	done    chan struct{} // closed when the loop has returned
	sends   sync.WaitGroup
	started bool
	closing sync.Once
	// ctx ends the slow steps in flight (the flow's questions, its reads
	// of the conversation) when the host has gone or the session closes.
	ctx    context.Context
	cancel context.CancelFunc

	// Owned by loop.
	fs       *flow.Session // nil until the server's name is known
	off      bool          // the flow serves nothing in this session
	gone     bool          // the server's output has ended
	hostGone bool          // the host has closed: no run starts, no lookup is made
	// judging are the agent's writes the confirmation judge holds, by raw
	// id: each waits for its own verdict, and nothing else waits for it.
	judging map[string]*holdEvent
	version string // the stateless era's version the host's requests name, "" in the session era
	calls   map[string]int
	// keys are the agent's calls (mcpmsg.CallKey) by index, and waiting
	// those answered input_required, by key: the host's retry of one
	// (stateless era) is that call again.
	keys    map[int]string
	waiting map[string]int
	lists   map[string]bool
	inits   map[string]bool
	run     *running
	pending map[string]lookupCall // the proxy's requests awaiting an answer, by raw id
	timer   <-chan time.Time      // the wait for the pending lookup, nil when none
	stop    func()                // cancels timer
	timerID string                // whose wait timer is
	n       uint64
	seed    *uint64 // the exploration draws' seed, nil when not exploring

	// --guards and --commit, owned by loop too (guards.go, commit.go);
	// nil when off.
	gd     *guardsState
	commit *commitState
	// rewrites are the ids of the host's initialize, server/discover and
	// tools/list requests with --commit, whose answers the owner rewrites:
	// stored by the host's reader, taken by the server's (needsNoVerdict).
	rewrites sync.Map
}

// hostEvent is a request the host sent, seen before it is forwarded.
type hostEvent struct {
	method  string
	id      string
	call    mcpmsg.Call
	version string // its _meta's version, in the stateless era
	retry   bool   // a call sent again with the input the server asked for
}

// serverEvent is a response the server sent, waiting for the owner's
// verdict before anything else of its stream is forwarded.
type serverEvent struct {
	m     jsonrpc.Message
	own   bool      // the answer to a request of the proxy's
	line  []byte    // the whole line, terminator included
	taken chan bool // the verdict: true when the owner took the line over; nil when none is awaited
}

// endEvent says the server's output has ended.
type endEvent struct{}

// hostDoneEvent says the host has closed its side of the session.
type hostDoneEvent struct{}

// running is the run in flight: the agent's answer it holds and the
// lookups made so far. r is nil until the conversation has been read for
// the run's first decision.
type running struct {
	idx   int // the agent's call whose answer is held
	r     *flow.Run
	held  []byte
	found []mcpmsg.Lookup
	// q are the questions being asked for the next decision, nil when
	// none; stop ends their wait.
	q    *flow.Questions
	stop context.CancelFunc
}

// stepEvent brings the owner what a run's slow step found off its
// goroutine: the conversation's new lines (said, for the session log;
// heard, for the flow session) and the answers to the run's questions.
type stepEvent struct {
	run     *running
	said    [][]byte
	heard   [][]byte
	q       *flow.Questions
	answers []oracle.Answer
}

// lookupCall is one of the proxy's requests, awaiting its answer.
type lookupCall struct {
	tool string
	args json.RawMessage
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
		judging:  map[string]*holdEvent{},
		opts:     o,
		server:   server,
		say:      say,
		newTimer: realTimer,
		ids:      jsonrpc.NewIDs(),
		events:   make(chan any, eventBuffer),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		calls:    map[string]int{},
		keys:     map[int]string{},
		waiting:  map[string]int{},
		lists:    map[string]bool{},
		inits:    map[string]bool{},
		pending:  map[string]lookupCall{},
	}
}

func realTimer(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}

// start starts the owner. toHost and toServer must be set.
func (a *active) start() {
	a.started = true
	go a.loop()
}

// fromHost learns what the host asks (line without terminator): initialize
// or server/discover, tools/list and the agent's tools/call. It does not
// wait for the owner.
func (a *active) fromHost(line []byte) {
	v := mcpmsg.ReadView(line)
	a.hostIDs(v)
	if ev, ok := hostEventOf(v); ok {
		a.send(ev)
	}
}

// hostIDs notes the ids of the host's requests in v, about to be
// forwarded; a request whose id a request of the proxy's has in flight
// waits here until that one is answered, so that the two are never in
// flight at once.
func (a *active) hostIDs(v mcpmsg.View) {
	if v.Kind == jsonrpc.Request {
		a.ids.Host(v.ID, a.done)
	}
	for _, p := range v.Parts {
		if p.Kind == jsonrpc.Request {
			a.ids.Host(p.ID, a.done)
		}
	}
}

// hostEventOf returns the event of a host message the owner learns from,
// and whether it is one. v is the line read once, as the server will read
// it (mcpmsg.View): every handler decides on the same reading.
func hostEventOf(v mcpmsg.View) (hostEvent, bool) {
	if v.Kind != jsonrpc.Request {
		return hostEvent{}, false
	}
	ev := hostEvent{method: v.Method, id: string(v.ID)}
	switch v.Method {
	case mcpmsg.MethodInitialize, mcpmsg.MethodDiscover, mcpmsg.MethodToolsList:
	case mcpmsg.MethodToolsCall:
		ev.call = v.Call
		ev.call.Args = bytes.Clone(ev.call.Args) // line is the pump's
		ev.retry = v.Retry
	default:
		return hostEvent{}, false
	}
	ev.version = v.Meta.ProtocolVersion
	return ev, true
}

// send hands the owner an event without waiting for it.
func (a *active) send(ev any) {
	select {
	case a.events <- ev:
	case <-a.done:
	}
}

// fromServer looks at a whole server line (terminator included) before it
// is forwarded, and reports whether the flow took it over: the answer to a
// lookup of its own, or the agent's answer held while the flow runs. Lines
// that are not responses are not the flow's and pass at once.
func (a *active) fromServer(line []byte) bool {
	m := jsonrpc.Classify(jsonrpc.TrimLine(line))
	if m.Kind != jsonrpc.Response || !m.HasID() {
		return false
	}
	own := a.ids.Answered(m.ID)
	if !own && a.needsNoVerdict(m) {
		a.send(serverEvent{m: m, line: line}) // the guards learn from it, in order
		return false
	}
	ev := serverEvent{m: m, line: line, own: own, taken: make(chan bool, 1)}
	return a.ask(ev, ev.taken, own) // when the flow is over, its own answers still never reach the host
}

// ask hands the owner ev, whose verdict comes on taken, and waits for it;
// over is the verdict when the owner has stopped without giving one.
func (a *active) ask(ev any, taken chan bool, over bool) bool {
	select {
	case a.events <- ev:
	case <-a.done:
		return over
	}
	select {
	case t := <-taken:
		return t
	case <-a.done:
		// The owner replies before it returns to its events, so a verdict
		// is there if the event was handled; else it never will be.
		select {
		case t := <-taken:
			return t
		default:
			return over
		}
	}
}

// serverDone tells the owner that the server's output has ended: a run in
// flight hands back what it found.
func (a *active) serverDone() {
	select {
	case a.events <- endEvent{}:
	case <-a.done:
	}
}

// hostDone tells the owner that the host has closed its side: a run in
// flight hands back what it found, its questions are cancelled, no lookup
// is made any more, and a write the judge holds is answered with an error,
// unsent (issue 23, point 5).
func (a *active) hostDone() { a.send(hostDoneEvent{}) }

// offload runs a slow step off the owner's goroutine, under ctx, and hands
// its result back to the owner as an event. A result that comes after the
// owner has returned is dropped.
func (a *active) offload(ctx context.Context, step func(context.Context) any) {
	a.sends.Add(1)
	go func() {
		defer a.sends.Done()
		a.send(step(ctx))
	}()
}

// forward sends one of the host's lines (without terminator) to the server
// for the owner, which must not wait for the write.
func (a *active) forward(line []byte) {
	a.sends.Add(1)
	go func() {
		defer a.sends.Done()
		a.toServer(append(line, '\n'))
	}()
}

// close hands back whatever the flow holds, stops the owner, waits for the
// requests it was sending, and closes the flow log. It is idempotent; the
// flow log's error is returned once.
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

// loop is the owner: it handles events one at a time until close.
func (a *active) loop() {
	defer close(a.done)
	if a.server != "" {
		a.startSession("")
	}
	for {
		select {
		case ev := <-a.events:
			a.handle(ev)
		case <-a.timer: // nil, and never ready, when no lookup waits
			a.say("flow: the MCP server did not answer %s within %v; handing back to the agent", a.timerID, a.opts.LookupTimeout)
			delete(a.pending, a.timerID)
			a.timer, a.stop, a.timerID = nil, nil, ""
			a.finish()
		case <-a.quit:
			a.drain()
			a.finish()
			a.unjudge("the session ended")
			return
		}
	}
}

// drain handles the events already queued when close was called, so that
// a response whose verdict a transport awaits gets one.
func (a *active) drain() {
	for {
		select {
		case ev := <-a.events:
			a.handle(ev)
		default:
			return
		}
	}
}

// handle handles one event.
func (a *active) handle(ev any) {
	switch ev := ev.(type) {
	case hostEvent:
		a.onHost(ev)
	case serverEvent:
		taken := a.onServer(ev)
		if ev.taken != nil {
			ev.taken <- taken
		}
		a.shown(ev, taken)
	case holdEvent:
		a.onHold(ev)
	case batchEvent:
		a.onBatch(ev)
	case judgedEvent:
		a.onJudged(ev)
	case stepEvent:
		a.onStep(ev)
	case hostDoneEvent:
		a.hostGone = true
		if !a.opts.Shadow {
			a.finish() // a shadow run makes no lookup: it ends by itself
		}
		a.unjudge("the host closed the session")
	case endEvent:
		a.gone = true
		a.finish()
		a.endCommits()
	}
}

// startSession makes the flow session once the server's name is known.
func (a *active) startSession(serverName string) {
	if a.opts.Flow == nil {
		a.off = true // --guards or --commit without --flow
		return
	}
	name := a.server
	if name == "" {
		name = serverName
	}
	o := flow.Options{
		Rule:   a.opts.Rule,
		Caps:   a.opts.Caps,
		Server: name,
		Tools:  a.opts.Tools,
		TaskID: a.opts.TaskID,
		Shadow: a.opts.Shadow,
	}
	a.opts.Oracle.options(&o)
	if o.TaskID == "" {
		o.TaskID = a.session
	}
	if o.Rule.Epsilon > 0 {
		seed := a.opts.Seed
		if !a.opts.SeedSet {
			seed = rand.Uint64()
		}
		a.seed = &seed
		o.Rand = rand.New(rand.NewPCG(seed, 0x686f697374))
	}
	o.Context = a.ctx
	fs, err := flow.NewSession(a.opts.Flow, o)
	if err != nil {
		a.off = true
		a.say("flow: %v", err)
		// The flow log says so too: a host may hide the proxy's stderr.
		a.logJSON(mcplog.FlowOff{Type: mcplog.TypeOff, Server: name, FlowServers: a.opts.Flow.Servers, Reason: err.Error()})
		return
	}
	fs.AskLater() // the owner asks them off its goroutine (step)
	a.fs = fs
}

func (a *active) onHost(ev hostEvent) {
	if mcpmsg.IsModern(ev.version) {
		a.version = ev.version // the proxy's own lookups must name it too
	}
	a.guardsCall(ev)
	switch ev.method {
	case mcpmsg.MethodInitialize, mcpmsg.MethodDiscover:
		a.inits[ev.id] = true
	case mcpmsg.MethodToolsList:
		a.lists[ev.id] = true
	case mcpmsg.MethodToolsCall:
		if a.fs == nil {
			return
		}
		key := mcpmsg.CallKey(ev.call.Name, ev.call.Args)
		if idx, ok := a.waiting[key]; ok && ev.retry {
			// The same call, sent again with the input the server asked
			// for: one call, whose answer is this request's.
			delete(a.waiting, key)
			a.calls[ev.id] = idx
			return
		}
		idx := a.fs.Call(ev.call.Name, ev.call.Args)
		a.calls[ev.id] = idx
		a.keys[idx] = key
	}
}

// onServer decides what becomes of a server response.
func (a *active) onServer(ev serverEvent) (taken bool) {
	m := ev.m
	id := string(m.ID)
	if ev.own {
		// The proxy's own, by its pending ids (never by the id's shape):
		// a commit's call or a lookup; never the host's.
		if !a.onCommitAnswer(id, m) {
			a.onAnswer(id, m)
		}
		return true
	}
	switch {
	case a.inits[id]:
		delete(a.inits, id)
		if a.fs == nil && !a.off && m.Result != nil {
			a.startSession(mcpmsg.ReadInitialized(m.Result).ServerName)
		}
		return a.commitInstructions(ev)
	case a.lists[id]:
		delete(a.lists, id)
		if a.fs != nil && m.Result != nil {
			a.fs.Listed(listedTools(m.Result))
		}
		return a.commitListed(ev)
	}
	if a.fs == nil && !a.off && m.Result != nil {
		// A stateless-era host need not ask the server who it is; each of
		// its results may say.
		if _, name := mcpmsg.ResultServerInfo(m.Result); name != "" {
			a.startSession(name)
		}
	}
	idx, ok := a.calls[id]
	if !ok {
		return false
	}
	delete(a.calls, id)
	if m.Result != nil && mcpmsg.InputRequired(m.Result) {
		// Not the call's answer: the server asks the host for input, and
		// the host sends the call again with it.
		a.waiting[a.keys[idx]] = idx
		return false
	}
	delete(a.keys, idx)
	res := mcpmsg.ResultOf(m)
	a.fs.Result(idx, res.Text(), res.IsError)
	if a.run != nil || a.hostGone && !a.opts.Shadow {
		return false // one run at a time, and none once the host has gone but in shadow, which looks nothing up
	}
	// The run's first decision waits for the conversation, read off the
	// owner's goroutine; the agent's answer waits with it, and nothing
	// else does.
	a.run = &running{idx: idx, held: bytes.Clone(ev.line)}
	a.step(a.run, nil)
	return true
}

// step starts a run's slow step: the conversation's new lines read, and
// the questions q asked (nil for none). Its result comes back as a
// stepEvent.
func (a *active) step(run *running, q *flow.Questions) {
	ctx, stop := context.WithCancel(a.ctx)
	run.q, run.stop = q, stop
	said, heard := a.context, a.said
	if said != nil && heard == nil && a.fs != nil {
		heard = &contextTail{path: said.path}
		a.said = heard
	}
	a.offload(ctx, func(ctx context.Context) any {
		ev := stepEvent{run: run, q: q}
		if said != nil {
			ev.said = said.read()
		}
		if heard != nil {
			ev.heard = heard.read()
		}
		if q != nil {
			ev.answers = q.Ask(ctx)
		}
		return ev
	})
}

// onStep goes on with a run once its slow step is done: the conversation
// is logged and heard, the answers taken, and the next decision made.
func (a *active) onStep(ev stepEvent) {
	run := ev.run
	if run != a.run {
		return // the run was handed back meanwhile
	}
	run.stop()
	run.q, run.stop = nil, nil
	for _, l := range ev.said {
		if a.rec != nil {
			a.rec.Record(mcplog.FromContext, l)
		}
	}
	for _, l := range ev.heard {
		if role, text, ok := mcpmsg.ReadChat(l); ok {
			a.fs.Message(role, text)
		}
	}
	if ev.q != nil {
		a.fs.Answered(ev.q, ev.answers)
		run.r.Reanswered()
	}
	first := run.r == nil
	if first {
		run.r = a.fs.Run(run.idx)
	}
	if q := a.fs.Due(); q != nil {
		a.step(run, q) // the decision waits for its questions
		return
	}
	a.decide(run, first)
}

// decide makes a run's next decision: a lookup, made as a request of the
// proxy's own, or the end of the run.
func (a *active) decide(run *running, first bool) {
	d := run.r.Next()
	a.logDecision(d)
	if first && (a.opts.Shadow || a.gone) {
		// Shadow makes no lookup, so its whole run is decided here; a
		// server that has gone answers none.
		for d.Taken >= 0 {
			d = run.r.Next()
			a.logDecision(d)
		}
	}
	if d.Taken < 0 || a.gone || a.hostGone {
		a.finish()
		return
	}
	a.lookup(d)
}

// lookup makes the lookup decision d took, as a request of the proxy's
// own, and starts its wait.
func (a *active) lookup(d flow.Decision) {
	o := d.Offers[d.Taken]
	tool := a.fs.CallName(o.Tool)
	a.n++
	id := mcpmsg.ProxyID(a.n)
	for !a.ids.Own(id) { // a host request of this id is in flight
		a.n++
		id = mcpmsg.ProxyID(a.n)
	}
	a.pending[string(id)] = lookupCall{tool: tool, args: o.Args}
	var meta []byte
	if mcpmsg.IsModern(a.version) {
		meta = mcpmsg.ModernMeta(a.version) // a stateless-era server refuses a request that does not name its version
	}
	req := mcpmsg.AppendToolCallMeta(nil, id, tool, o.Args, meta)
	if a.rec != nil {
		a.rec.Record(mcplog.FromProxy, bytes.Clone(req))
	}
	a.timer, a.stop = a.newTimer(a.opts.LookupTimeout)
	a.timerID = string(id)
	// The write may wait (for the host's line in progress to the server,
	// or for a slow server), and the owner must not: it has the server's
	// responses to decide on meanwhile.
	a.forward(req)
}

// onAnswer takes the answer to the proxy's request id: the run goes on
// with it. An answer nobody waits for (its wait timed out, or the run
// ended) is dropped.
func (a *active) onAnswer(id string, m jsonrpc.Message) {
	lc, ok := a.pending[id]
	if !ok {
		return
	}
	delete(a.pending, id)
	if a.timerID == id {
		a.stopTimer()
	}
	if a.run == nil || a.run.r == nil {
		return
	}
	res := mcpmsg.ResultOf(m)
	if m.Result != nil && mcpmsg.InputRequired(m.Result) {
		// The server wants input the proxy cannot give: nothing found.
		a.run.r.Answer("", true)
	} else {
		a.run.r.Answer(res.Text(), res.IsError)
		a.keep(lc, res.Text())
	}
	if a.gone || a.hostGone {
		a.finish()
		return
	}
	// The next decision waits for the conversation and for the questions
	// the answer's site names.
	a.step(a.run, a.fs.Due())
}

// finish ends the run in flight, if any: its slow step is cancelled, its
// record logged and the held answer handed back, with what the lookups
// found appended.
func (a *active) finish() {
	if a.run == nil {
		return
	}
	run := a.run
	a.run = nil
	if run.stop != nil {
		run.stop()
	}
	for id := range a.pending {
		delete(a.pending, id) // an answer still to come is dropped
	}
	a.stopTimer()
	if run.r == nil && a.opts.Shadow {
		// Ended before the conversation was read: a shadow run is decided
		// still, with what the session heard so far, so that its flow log
		// is whole.
		run.r = a.fs.Run(run.idx)
		for d := run.r.Next(); ; d = run.r.Next() {
			a.logDecision(d)
			if d.Taken < 0 {
				break
			}
		}
	}
	if run.r != nil {
		if run.q != nil {
			a.fs.Answered(run.q, nil) // never answered: asked again when offered again
		}
		a.fs.Answered(a.fs.Due(), nil)
		a.logJSON(run.r.End())
	}
	out := run.held
	if len(run.found) > 0 {
		if with, ok := mcpmsg.AppendText(jsonrpc.TrimLine(run.held), mcpmsg.FormatLookups(run.found)); ok {
			if a.rec != nil {
				a.rec.Record(mcplog.FromProxy, bytes.Clone(with))
			}
			out = append(with, '\n')
		}
	}
	a.shownHeld(out)
	a.toHost(out)
}

// stopTimer cancels the wait for a lookup's answer.
func (a *active) stopTimer() {
	if a.stop != nil {
		a.stop()
	}
	a.timer, a.stop, a.timerID = nil, nil, ""
}

// keep appends a lookup's answer to what the run hands back, unless the
// run left it out for passing --flow-max-bytes (the flow log says so).
func (a *active) keep(lc lookupCall, text string) {
	if a.run.r.Kept() {
		a.run.found = append(a.run.found, mcpmsg.Lookup{Tool: lc.tool, Args: lc.args, Text: text})
	}
}

// logDecision logs a decision, with the seed of the session's draws when
// it explores.
func (a *active) logDecision(d flow.Decision) {
	d.Seed = a.seed
	a.logJSON(d)
}

func (a *active) logJSON(v any) {
	if a.flowLog == nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		a.say("flow log: %v", err)
		return
	}
	a.flowLog.Append(b)
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

// listedTools reads a tools/list result.
func listedTools(result []byte) []episode.Tool {
	listed, _ := mcpmsg.ReadTools(result)
	out := make([]episode.Tool, 0, len(listed))
	for _, t := range listed {
		out = append(out, episode.Tool{Name: t.Name, Kind: episode.KindOf(t.Annotations), InputSchema: t.InputSchema, Annotations: t.Annotations})
	}
	return out
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
