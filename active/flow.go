package active

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// The flow's handlers (manual, "Active mode"): the Machine learns the
// agent's calls from the host's requests, holds the server's answer to a
// call while the flow runs at its site, makes the lookups the flow takes
// as requests of its own (ids hoist-<n>), and hands the answer back with
// their results appended. One run at a time: an answer that arrives
// meanwhile is forwarded as it is. The proxy's lookups wait in a pending
// map keyed by id, as go-sdk's jsonrpc2 keeps its calls: an answer that
// comes after its lookup timed out finds no entry and is dropped, never
// taken for the next lookup's.

// running is the run in flight: the agent's answer it holds and the
// lookups made so far. r is nil until the conversation has been read for
// the run's first decision.
type running struct {
	idx   int // the agent's call whose answer is held
	r     *flow.Run
	held  []byte
	found []mcpmsg.Lookup
	// step is the slow step in flight (Step), 0 when none; q its
	// questions.
	step uint64
	q    *flow.Questions
}

// startSession makes the flow session once the server's name is known.
func (m *Machine) startSession(serverName string) {
	fc := m.cfg.Flow
	if fc == nil {
		m.off = true // --guards or --commit without --flow
		return
	}
	name := m.cfg.Server
	if name == "" {
		name = serverName
	}
	o := flow.Options{
		Rule:          fc.Rule,
		Caps:          fc.Caps,
		Server:        name,
		Tools:         fc.Tools,
		TaskID:        fc.TaskID,
		Agent:         fc.Agent,
		Shadow:        fc.Shadow,
		Oracle:        fc.Oracle,
		OracleTimeout: fc.OracleTimeout,
		Context:       fc.Context,
	}
	if o.TaskID == "" {
		o.TaskID = m.cfg.Session
	}
	if o.Rule.Epsilon > 0 {
		seed := fc.Seed
		m.seed = &seed
		o.Rand = rand.New(rand.NewPCG(seed, 0x686f697374))
	}
	fs, err := flow.NewSession(fc.Flow, o)
	if err != nil {
		m.off = true
		m.say("flow: %v", err)
		// The flow log says so too: a host may hide the proxy's stderr.
		m.logJSON(FlowLog, mcplog.FlowOff{Type: mcplog.TypeOff, Server: name, FlowServers: fc.Flow.Servers, Reason: err.Error()})
		return
	}
	fs.AskLater() // the proxy asks them off the Machine (Step)
	m.fs = fs
}

func (m *Machine) onHost(ev Request) {
	if mcpmsg.IsModern(ev.Version) {
		m.version = ev.Version // the proxy's own requests must name it too
	}
	if m.gd != nil && ev.Method == mcpmsg.MethodToolsCall {
		m.gd.calls[ev.ID] = ev.Call
	}
	switch ev.Method {
	case mcpmsg.MethodInitialize, mcpmsg.MethodDiscover:
		m.inits[ev.ID] = true
	case mcpmsg.MethodToolsList:
		m.lists[ev.ID] = true
	case mcpmsg.MethodToolsCall:
		if m.fs == nil {
			return
		}
		key := mcpmsg.CallKey(ev.Call.Name, ev.Call.Args)
		if idx, ok := m.waiting[key]; ok && ev.Retry {
			// The same call, sent again with the input the server asked
			// for: one call, whose answer is this request's.
			delete(m.waiting, key)
			m.calls[ev.ID] = idx
			return
		}
		idx := m.fs.Call(ev.Call.Name, ev.Call.Args)
		m.calls[ev.ID] = idx
		m.keys[idx] = key
	}
}

// onServer decides what becomes of a server response.
func (m *Machine) onServer(ev Response) (taken bool) {
	msg := ev.Msg
	id := string(msg.ID)
	if ev.Own {
		// The proxy's own, by its pending ids (never by the id's shape):
		// a commit's call or a lookup; never the host's.
		if !m.onOwnList(id, msg) && !m.onCommitAnswer(id, msg) {
			m.onAnswer(id, msg)
		}
		return true
	}
	switch {
	case m.inits[id]:
		delete(m.inits, id)
		if m.fs == nil && !m.off && msg.Result != nil {
			m.startSession(mcpmsg.ReadInitialized(msg.Result).ServerName)
		}
		return m.commitInstructions(ev)
	case m.lists[id]:
		delete(m.lists, id)
		if m.fs != nil && msg.Result != nil {
			m.fs.Listed(listedTools(msg.Result))
		}
		if line, hid := m.checkPins(ev.Line, msg); hid {
			ev = Response{Msg: jsonrpc.Classify(jsonrpc.TrimLine(line)), Line: line}
			if !m.commitListed(ev) {
				m.answer(jsonrpc.TrimLine(line))
			}
			return true
		}
		return m.commitListed(ev)
	}
	if m.fs == nil && !m.off && msg.Result != nil {
		// A stateless-era host need not ask the server who it is; each of
		// its results may say.
		if _, name := mcpmsg.ResultServerInfo(msg.Result); name != "" {
			m.startSession(name)
		}
	}
	idx, ok := m.calls[id]
	if !ok {
		return false
	}
	delete(m.calls, id)
	if msg.Result != nil && mcpmsg.InputRequired(msg.Result) {
		// Not the call's answer: the server asks the host for input, and
		// the host sends the call again with it.
		m.waiting[m.keys[idx]] = idx
		return false
	}
	delete(m.keys, idx)
	res := mcpmsg.ResultOf(msg)
	m.fs.Result(idx, res.Text(), res.IsError)
	if m.run != nil || m.closed || m.hostGone && !m.cfg.Flow.Shadow {
		return false // one run at a time, and none once the host has gone but in shadow, which looks nothing up
	}
	// The run's first decision waits for the conversation, read off the
	// Machine; the agent's answer waits with it, and nothing else does.
	m.run = &running{idx: idx, held: bytes.Clone(ev.Line)}
	m.step(m.run, nil)
	return true
}

// step starts a run's slow step: the conversation's new lines read, and
// the questions q asked (nil for none). Its result comes back as Stepped.
func (m *Machine) step(run *running, q *flow.Questions) {
	m.steps++
	run.step, run.q = m.steps, q
	m.emit(Step{ID: run.step, Said: m.cfg.Context, Heard: m.cfg.Context && m.fs != nil, Questions: q})
}

// onStep goes on with a run once its slow step is done: the conversation
// is logged and heard, the answers taken, and the next decision made.
func (m *Machine) onStep(ev Stepped) {
	run := m.run
	if run == nil || run.step != ev.Step {
		return // the run was handed back meanwhile
	}
	m.emit(CancelStep{ID: run.step})
	run.step, run.q = 0, nil
	for _, l := range ev.Said {
		m.emit(Record{Line: l})
	}
	for _, l := range ev.Heard {
		if role, text, ok := mcpmsg.ReadChat(l); ok {
			m.fs.Message(role, text)
		}
	}
	if ev.Q != nil {
		m.fs.Answered(ev.Q, ev.Answers)
		run.r.Reanswered()
	}
	first := run.r == nil
	if first {
		run.r = m.fs.Run(run.idx)
	}
	if q := m.fs.Due(); q != nil {
		m.step(run, q) // the decision waits for its questions
		return
	}
	m.decide(run, first)
}

// decide makes a run's next decision: a lookup, made as a request of the
// proxy's own, or the end of the run.
func (m *Machine) decide(run *running, first bool) {
	d := run.r.Next()
	m.logDecision(d)
	if first && (m.cfg.Flow.Shadow || m.gone) {
		// Shadow makes no lookup, so its whole run is decided here; a
		// server that has gone answers none.
		for d.Taken >= 0 {
			d = run.r.Next()
			m.logDecision(d)
		}
	}
	if d.Taken < 0 || m.gone || m.hostGone || m.closed {
		m.finish()
		return
	}
	m.lookup(d)
}

// lookup makes the lookup decision d took, as a request of the proxy's
// own, and starts its wait.
func (m *Machine) lookup(d flow.Decision) {
	o := d.Offers[d.Taken]
	tool := m.fs.CallName(o.Tool)
	m.n++
	id := mcpmsg.ProxyID(m.n)
	for !m.cfg.IDs.Own(id) { // a host request of this id is in flight
		m.n++
		id = mcpmsg.ProxyID(m.n)
	}
	m.pending[string(id)] = lookupCall{tool: tool, args: o.Args}
	var meta []byte
	if mcpmsg.IsModern(m.version) {
		meta = mcpmsg.ModernMeta(m.version) // a stateless-era server refuses a request that does not name its version
	}
	req := mcpmsg.AppendToolCallMeta(nil, id, tool, o.Args, meta)
	m.timerID = string(id)
	m.emit(Timer{ID: m.timerID, D: m.cfg.Flow.LookupTimeout})
	// The write may wait (for the host's line in progress to the server,
	// or for a slow server), and the Machine must not: the proxy writes
	// it off the Machine's goroutine.
	m.emit(ToServer{Line: append(req, '\n'), Own: true})
}

// onAnswer takes the answer to the proxy's request id: the run goes on
// with it. An answer nobody waits for (its wait timed out, or the run
// ended) is dropped.
func (m *Machine) onAnswer(id string, msg jsonrpc.Message) {
	lc, ok := m.pending[id]
	if !ok {
		return
	}
	delete(m.pending, id)
	if m.timerID == id {
		m.stopTimer()
	}
	if m.run == nil || m.run.r == nil {
		return
	}
	res := mcpmsg.ResultOf(msg)
	if msg.Result != nil && mcpmsg.InputRequired(msg.Result) {
		// The server wants input the proxy cannot give: nothing found.
		m.run.r.Answer("", true)
	} else {
		m.run.r.Answer(res.Text(), res.IsError)
		if m.run.r.Kept() {
			m.run.found = append(m.run.found, mcpmsg.Lookup{Tool: lc.tool, Args: lc.args, Text: res.Text()})
		}
	}
	if m.gone || m.hostGone || m.closed {
		m.finish()
		return
	}
	// The next decision waits for the conversation and for the questions
	// the answer's site names.
	m.step(m.run, m.fs.Due())
}

// finish ends the run in flight, if any: its slow step is cancelled, its
// record logged and the held answer handed back, with what the lookups
// found appended.
func (m *Machine) finish() {
	if m.run == nil {
		return
	}
	run := m.run
	m.run = nil
	if run.step != 0 {
		m.emit(CancelStep{ID: run.step})
	}
	clear(m.pending) // an answer still to come is dropped
	m.stopTimer()
	if run.r == nil && m.cfg.Flow.Shadow {
		// Ended before the conversation was read: a shadow run is decided
		// still, with what the session heard so far, so that its flow log
		// is whole.
		run.r = m.fs.Run(run.idx)
		for d := run.r.Next(); ; d = run.r.Next() {
			m.logDecision(d)
			if d.Taken < 0 {
				break
			}
		}
	}
	if run.r != nil {
		if run.q != nil {
			m.fs.Answered(run.q, nil) // never answered: asked again when offered again
		}
		m.fs.Answered(m.fs.Due(), nil)
		m.logJSON(FlowLog, run.r.End())
	}
	out, own := run.held, false
	if len(run.found) > 0 {
		if with, ok := mcpmsg.AppendText(jsonrpc.TrimLine(run.held), mcpmsg.FormatLookups(run.found)); ok {
			out, own = append(with, '\n'), true
		}
	}
	if m.gd != nil {
		m.learn(jsonrpc.Classify(jsonrpc.TrimLine(out))) // the agent's answer as the agent gets it
	}
	m.emit(ToHost{Line: out, Own: own})
}

// stopTimer cancels the wait for a lookup's answer.
func (m *Machine) stopTimer() {
	if m.timerID != "" {
		m.emit(StopTimer{})
	}
	m.timerID = ""
}

// logDecision logs a decision, with the seed of the session's draws when
// it explores.
func (m *Machine) logDecision(d flow.Decision) {
	d.Seed = m.seed
	m.logJSON(FlowLog, d)
}

// logJSON appends v to a side log, when it is kept.
func (m *Machine) logJSON(to LogKind, v any) {
	switch {
	case to == FlowLog && !m.cfg.FlowLog, to == GuardsLog && !m.cfg.GuardsLog, to == ConfirmLog && !m.cfg.ConfirmLog:
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		m.say("%s: %v", [...]string{"flow log", "guards log", "confirm log"}[to], err)
		return
	}
	m.emit(Log{To: to, Line: b})
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
