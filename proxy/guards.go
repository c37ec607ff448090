package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hoist-mcp/hoist/guards"
	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// GuardsOptions check each of the agent's writes against a domain's policy
// before the server sees it (hoist-mcp --guards; manual, "Active mode").
type GuardsOptions struct {
	// Domain picks the rules: guards.Retail or guards.Airline.
	Domain string
	// Modes override the rules' default modes, by rule id (--guard).
	Modes map[string]guards.Mode
	// Log is the guards log's path ({session} stands for the session); ""
	// means <session>.guards.jsonl beside the session log, or none.
	Log string
	// Judge, when set, is the confirmation judge (--confirm-judge).
	Judge *JudgeOptions
}

// activeMode reports whether the session needs the active owner: a flow,
// the guards or hoist_commit.
func (o *Options) activeMode() bool { return o.Flow != nil || o.Guards != nil || o.Commit }

// guardsState is --guards in one session, owned by the active loop; the
// fields set before start (writes) are read-only after.
type guardsState struct {
	// writes are the domain's write tools: the host lines held for a
	// verdict. Read-only after start, so the transports read it too.
	writes map[string]bool

	s   *guards.Session
	log *mcplog.Writer
	// ownLog is true when log was made for this session alone (beside its
	// session log), not a --guards-log that sessions may share.
	ownLog bool
	// context reads the --context file for the guards alone: the
	// conversation up to each check, whoever else reads the file.
	context *contextTail
	// calls are the agent's tools/calls awaiting their answer, by raw id:
	// what their answer shows the agent becomes the guards' facts.
	calls map[string]mcpmsg.Call
	// jd is the confirmation judge, nil when off (judge.go).
	jd *judgeState
}

// holdEvent is a tools/call of the host's that the proxy may answer instead
// of forwarding: a write the guards check, or hoist_commit. The transport
// waits for the verdict before it forwards anything else of the host's.
type holdEvent struct {
	host  hostEvent
	line  []byte    // the whole line, without terminator: the owner forwards a judged write itself
	taken chan bool // true: the proxy answered it or forwards it itself, and the transport does not
}

// setUpActive prepares the guards and hoist_commit of a session (o.Guards,
// o.Commit): the rules, the guards log ({session} is session) and their own
// reader of the conversation.
func (a *active) setUpActive(o Options, rec *mcplog.Writer, context *contextTail, session string) error {
	a.session = session
	if o.Commit {
		a.commit = &commitState{}
	}
	if o.Guards == nil {
		return nil
	}
	s, err := guards.NewSession(guards.Config{Domain: o.Guards.Domain, Modes: o.Guards.Modes})
	if err != nil {
		return fmt.Errorf("--guards: %w", err)
	}
	g := &guardsState{writes: map[string]bool{}, s: s, calls: map[string]mcpmsg.Call{}}
	for _, w := range guards.Writes(o.Guards.Domain) {
		g.writes[w] = true
	}
	if context != nil {
		g.context = &contextTail{path: context.path}
	}
	a.gd = g
	w, err := openGuardsLog(o.Guards.Log, rec, session)
	g.log, g.ownLog = w, w != nil && o.Guards.Log == ""
	// The judge judges without its log, as the guards check without theirs.
	jd, jerr := newJudgeState(o.Guards.Judge, rec, session)
	g.jd = jd
	return errors.Join(err, jerr)
}

// openGuardsLog opens a session's guards log: --guards-log FILE ({session}
// standing for the session), appended to, since sessions may share it;
// else <session>.guards.jsonl beside the session log, made new; else none.
func openGuardsLog(flag string, rec *mcplog.Writer, session string) (*mcplog.Writer, error) {
	return openSideLog(flag, rec, session, mcplog.GuardsSuffix, "guards log")
}

// closeGuards closes the guards log, once the loop has returned.
func (a *active) closeGuards() error {
	if a.gd == nil {
		return nil
	}
	err := a.gd.jd.close()
	if a.gd.log != nil {
		err = errors.Join(a.gd.log.Close(), err)
	}
	return err
}

// removeOwnGuardsLog removes the guards log of a session that never
// started, when it was this session's own: a shared --guards-log holds
// other sessions' lines.
func (a *active) removeOwnGuardsLog() {
	if a.gd != nil && a.gd.log != nil && a.gd.ownLog {
		os.Remove(a.gd.log.Path())
	}
	if a.gd != nil {
		a.gd.jd.removeOwn()
	}
}

// needsNoVerdict reports whether the server's response m may go on to the
// host before the owner has seen it: without a flow, only hoist_commit's
// answers and, with --commit, the answers to initialize and tools/list
// (which it rewrites) are the owner's to decide. The others are handed to
// the owner without waiting, before they are forwarded, so the guards learn
// from each before any call the host makes after reading it.
func (a *active) needsNoVerdict(m jsonrpc.Message) bool {
	if a.opts.Flow != nil || !a.holdsHost() {
		return false
	}
	if a.commit == nil {
		return true
	}
	_, rewrite := a.rewrites.LoadAndDelete(string(m.ID))
	return !rewrite
}

// holdsHost reports whether the host's lines must reach the proxy whole,
// before they are forwarded: with --guards or --commit it answers some of
// them itself. Without either, the host's bytes are relayed as they always
// were.
func (a *active) holdsHost() bool { return a.gd != nil || a.commit != nil }

// hostLine takes one whole line of the host's (without terminator) before
// it is forwarded, and reports whether the proxy answered it instead: a
// write an enforced rule refused, or hoist_commit. A write the guards check
// waits for the owner's verdict; anything else is only learnt from, as
// fromHost does.
func (a *active) hostLine(line []byte) (taken bool) {
	if !a.holdsHost() {
		a.fromHost(line)
		return false
	}
	v := mcpmsg.ReadView(line)
	sc := screenHost(v, a.holds, a.heldOdd)
	switch {
	case sc.answer != nil:
		a.answer(sc.answer)
		a.say("refused a host message: %s", sc.why)
		return true
	case sc.drop:
		a.say("dropped %s", sc.why)
		return true
	}
	a.hostIDs(v)
	if v.Kind == jsonrpc.Batch {
		return a.hostBatch(v)
	}
	if !sc.learn {
		return false
	}
	ev := sc.ev
	if a.commit != nil && ev.method != mcpmsg.MethodToolsCall {
		a.rewrites.Store(ev.id, true) // hoist_commit's sentence or tool goes in its answer
	}
	if !sc.held {
		a.send(ev)
		return false
	}
	h := holdEvent{host: ev, line: bytes.Clone(line), taken: make(chan bool, 1)}
	return a.ask(h, h.taken, false) // when the session is over, nothing checks any more
}

// screened is what becomes of a host line before the owner sees it.
type screened struct {
	// answer, when set, is the proxy's answer in the line's place: the line
	// is not forwarded.
	answer []byte
	// drop: the line is neither forwarded nor answered (a notification).
	drop bool
	why  string
	// ev is the request the owner learns from, when learn; held is true
	// when it must wait for the owner's verdict (a write the guards check,
	// hoist_commit): the guards decide on ev.call.
	ev    hostEvent
	learn bool
	held  bool
}

// screenHost decides, from the line's view alone, whether a host line goes
// on to the owner: a message that two common decoders read differently
// (View.Odd) is refused, and so is a held call whose arguments are (odd);
// a held call sent as a notification is dropped (it could be neither
// refused nor answered). A batch is screened whole here and part by part
// by hostBatch. What it passes, the owner decides on as ev: exactly what
// the server will read (issue 23).
func screenHost(v mcpmsg.View, holds func(string) bool, odd func(mcpmsg.View) string) screened {
	if v.Odd != "" {
		why := oddRefusal(v.Odd)
		switch v.Kind {
		case jsonrpc.Request:
			return screened{answer: mcpmsg.AppendError(nil, v.ID, oddCode(v.Odd), why), why: why}
		case jsonrpc.Batch:
			out := []byte{'['}
			for _, p := range v.Parts {
				if p.Kind != jsonrpc.Request {
					continue
				}
				if len(out) > 1 {
					out = append(out, ',')
				}
				out = mcpmsg.AppendError(out, p.ID, oddCode(v.Odd), why)
			}
			if len(out) == 1 {
				return screened{drop: true, why: "a batch of notifications: " + why}
			}
			return screened{answer: append(out, ']'), why: why}
		case jsonrpc.Notification:
			return screened{drop: true, why: "a notification: " + why}
		}
	}
	if v.Kind == jsonrpc.Notification && v.Method == mcpmsg.MethodToolsCall && holds(v.Call.Name) {
		return screened{drop: true, why: "a tools/call notification of " + v.Call.Name + ": a write is checked only as a request, which has an answer"}
	}
	ev, ok := hostEventOf(v)
	if !ok {
		return screened{}
	}
	sc := screened{ev: ev, learn: true, held: ev.method == mcpmsg.MethodToolsCall && holds(ev.call.Name)}
	if sc.held {
		if why := odd(v); why != "" {
			return screened{answer: mcpmsg.AppendError(nil, v.ID, -32602, why), why: why}
		}
	}
	return sc
}

// heldOdd says why a held call is refused before any rule reads it: a
// member of a write's arguments that two common decoders read differently,
// or a line that is JSON only to a lenient decoder; "" when there is none.
// hoist_commit's own arguments are the proxy's to read (its calls' are
// checked one by one, commitNext).
func (a *active) heldOdd(v mcpmsg.View) string {
	if p := v.ArgsOdd(); p != "" && a.gd != nil && a.gd.writes[v.Call.Name] {
		return oddRefusal(p)
	}
	if v.Forgiven != "" {
		return "refused: this call is not valid JSON (" + v.Forgiven + "), which some servers read anyway and others refuse, so hoist-mcp does not send it"
	}
	return ""
}

// oddRefusal is the error for a message whose member at path two common
// decoders read differently.
func oddRefusal(path string) string {
	name := path
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	return fmt.Sprintf("refused: the member %q (%s) is read differently by common JSON decoders (encoding/json matches member names regardless of case, JSON.parse and Python's json match them exactly), so hoist-mcp cannot tell what the server would run; spell each member name exactly as the protocol and the tool's schema do", name, path)
}

// oddCode is the JSON-RPC error code of an odd member at path: invalid
// params for a member of params, else invalid request.
func oddCode(path string) int {
	if strings.Contains(path, "params.") {
		return -32602
	}
	return -32600
}

// heldNotification reports whether v is a tools/call sent as a
// notification, without an id, of a tool the proxy holds: it could be
// neither refused nor answered, so it is never forwarded.
func (a *active) heldNotification(v mcpmsg.View) bool {
	return v.Kind == jsonrpc.Notification && v.Method == mcpmsg.MethodToolsCall && a.holds(v.Call.Name)
}

// holds reports whether a call of tool waits for the owner's verdict.
func (a *active) holds(tool string) bool {
	return a.commit != nil && tool == mcpmsg.CommitTool || a.gd != nil && a.gd.writes[tool]
}

// onHold decides on a held call, and gives the transport its verdict on
// ev.taken: hoist_commit is the proxy's to run; a write an enforced rule
// refuses is answered with the refusal; any other goes on to the server,
// and the owner learns of it as of every call. The verdict goes out before
// the guards log is written, which the write need not wait for.
func (a *active) onHold(ev holdEvent) {
	h := ev.host
	if mcpmsg.IsModern(h.version) {
		a.version = h.version
	}
	if h.call.Name == mcpmsg.CommitTool {
		if a.commit != nil && !a.commit.listed {
			a.startCommit(h)
			ev.taken <- true
			return
		}
		if a.gd == nil || !a.gd.writes[h.call.Name] {
			a.onHost(h) // the server's own hoist_commit
			ev.taken <- false
			return
		}
	}
	id := json.RawMessage(h.id)
	c, took := a.judge(h.call)
	if a.judges(c) {
		a.logCheck(id, nil, h.call, c, took)
		// In flight while the judge thinks: the writes checked meanwhile
		// see it, as they would once it was sent.
		a.gd.s.Sent(h.call.Name, h.call.Args)
		a.startJudge(judgedEvent{hold: &ev, id: id, call: h.call}, c)
		return
	}
	if c.Refused != nil {
		a.answer(mcpmsg.AppendToolResult(nil, id, c.Refusal(), true, nil))
		ev.taken <- true
	} else {
		ev.taken <- false
		a.gd.s.Sent(h.call.Name, h.call.Args)
		a.onHost(h)
	}
	a.logCheck(id, nil, h.call, c, took)
}

// check asks the guards about a call and logs their verdicts: id is the
// call's, commit the hoist_commit it was made for (nil for the agent's
// own).
func (a *active) check(id, commit json.RawMessage, call mcpmsg.Call) guards.Check {
	c, took := a.judge(call)
	a.logCheck(id, commit, call, c, took)
	return c
}

// judge returns the guards' verdicts on a call, with the conversation up
// to now, and how long they took.
func (a *active) judge(call mcpmsg.Call) (guards.Check, time.Duration) {
	g := a.gd
	start := time.Now()
	if g.context != nil {
		for _, l := range g.context.read() {
			if role, text, ok := mcpmsg.ReadChat(l); ok {
				g.s.Message(role, text)
			}
		}
	}
	c := g.s.Check(call.Name, call.Args)
	// The confirmation judge, when on, is asked next, from c.Confirmation
	// (judges, startJudge): the word list's verdict is only logged.
	return c, time.Since(start)
}

// logCheck writes a write's verdicts to the guards log, and says so when a
// rule refused it.
func (a *active) logCheck(id, commit json.RawMessage, call mcpmsg.Call, c guards.Check, took time.Duration) {
	g := a.gd
	if g.log != nil && c.Write {
		line := mcplog.GuardsCheck{Type: mcplog.TypeCheck, ID: id, Commit: commit, Tool: call.Name, Args: call.Args, CheckUS: took.Microseconds()}
		if len(line.Args) == 0 {
			line.Args = json.RawMessage("{}")
		}
		for _, v := range c.Verdicts {
			line.Verdicts = append(line.Verdicts, mcplog.GuardVerdict{Rule: v.Rule, Verdict: string(v.Outcome), Reason: v.Reason, Lacks: v.Lacks, Enforced: v.Enforced})
		}
		if c.Refused != nil {
			line.Refused, line.Refusal = c.Refused.Rule, c.Refusal()
		}
		if cf := c.Confirmation; cf != nil {
			line.Confirmation = &mcplog.GuardConfirmation{AgentSaid: cf.AgentSaid, UserSaid: cf.UserSaid}
		}
		if b, err := json.Marshal(line); err == nil {
			g.log.Append(b)
		} else {
			a.say("guards log: %v", err)
		}
	}
	if c.Refused != nil {
		a.say("guards: refused %s (policy check %s)", call.Name, c.Refused.Rule)
	}
}

// answer sends the host a line of the proxy's own (without terminator),
// logged as a proxy entry.
func (a *active) answer(line []byte) {
	if a.rec != nil {
		a.rec.Record(mcplog.FromProxy, bytes.Clone(line))
	}
	a.toHost(append(line, '\n'))
}

// guardsCall notes one of the agent's calls, whose answer the guards will
// learn from.
func (a *active) guardsCall(ev hostEvent) {
	if a.gd != nil && ev.method == mcpmsg.MethodToolsCall {
		a.gd.calls[ev.id] = ev.call
	}
}

// shown gives the guards what a server response showed the agent, once the
// transport has its verdict. A response the flow holds shows the agent
// nothing yet: shownHeld takes it when the flow hands it back.
func (a *active) shown(ev serverEvent, taken bool) {
	if a.gd == nil || taken {
		return
	}
	a.learn(ev.m)
}

// shownHeld gives the guards the agent's answer a flow held, as the agent
// gets it: with the lookups appended.
func (a *active) shownHeld(line []byte) {
	if a.gd == nil {
		return
	}
	a.learn(jsonrpc.Classify(jsonrpc.TrimLine(line)))
}

// learn takes the answer m to one of the agent's calls as facts.
func (a *active) learn(m jsonrpc.Message) {
	call, ok := a.gd.calls[string(m.ID)]
	if !ok {
		return
	}
	delete(a.gd.calls, string(m.ID))
	if m.Result != nil && mcpmsg.InputRequired(m.Result) {
		return // not an answer: the host sends the call again
	}
	res := mcpmsg.ResultOf(m)
	a.gd.s.Result(call.Name, call.Args, res.Text(), res.IsError)
}
