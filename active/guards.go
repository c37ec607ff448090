package active

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hoist-mcp/hoist/guards"
	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// guardsState is --guards in one session. writes is read-only after New,
// so Screen reads it from any goroutine; the rest is the Machine's.
type guardsState struct {
	writes map[string]bool
	s      *guards.Session
	// calls are the agent's tools/calls awaiting their answer, by raw id:
	// what their answer shows the agent becomes the guards' facts.
	calls map[string]mcpmsg.Call
	judge *JudgeConfig
}

// RequestOf returns the request of a host message the Machine learns from,
// and whether it is one. v is the line read once, as the server will read
// it (mcpmsg.View): every handler decides on the same reading.
func RequestOf(v mcpmsg.View) (Request, bool) {
	if v.Kind != jsonrpc.Request {
		return Request{}, false
	}
	ev := Request{Method: v.Method, ID: string(v.ID)}
	switch v.Method {
	case mcpmsg.MethodInitialize, mcpmsg.MethodDiscover, mcpmsg.MethodToolsList:
	case mcpmsg.MethodToolsCall:
		ev.Call = v.Call
		ev.Call.Args = bytes.Clone(ev.Call.Args) // the line is the transport's
		ev.Retry = v.Retry
	default:
		return Request{}, false
	}
	ev.Version = v.Meta.ProtocolVersion
	return ev, true
}

// HoldsHost reports whether the host's lines must reach the Machine whole,
// before they are forwarded: with --guards or --commit it answers some of
// them itself. Without either, the host's bytes are relayed as they always
// were.
func (m *Machine) HoldsHost() bool {
	return m.gd != nil || m.commit != nil || m.lim != nil || m.pins != nil
}

// Holds reports whether a call of tool waits for the Machine's verdict: a
// write the guards check, hoist_commit, a call a limit counts, or any call
// when pinned tools may be hidden or the session held.
func (m *Machine) Holds(tool string) bool {
	return m.commit != nil && tool == mcpmsg.CommitTool || m.gd != nil && m.gd.writes[tool] || m.lim.limits(tool) || m.cfg.Pins.Acts()
}

// Screened is what becomes of a host line before the Machine sees it.
type Screened struct {
	// Answer, when set, is the proxy's answer in the line's place (without
	// terminator): the line is not forwarded.
	Answer []byte
	// Drop: the line is neither forwarded nor answered (a notification).
	Drop bool
	Why  string
	// Req is the request the Machine learns from, when Learn; Held is true
	// when it must wait for the Machine's verdict (a write the guards
	// check, hoist_commit): the guards decide on Req.Call.
	Req   Request
	Learn bool
	Held  bool
}

// Screen decides, from the line's view alone, whether a host line goes on
// to the Machine: a message that two common decoders read differently
// (View.Odd) is refused, and so is a held call whose arguments are (odd);
// a held call sent as a notification is dropped (it could be neither
// refused nor answered). A batch is screened whole here and part by part
// by ScreenBatch. What it passes, the Machine decides on as Req: exactly
// what the server will read (issue 23).
func (m *Machine) Screen(v mcpmsg.View) Screened {
	if v.Odd != "" {
		why := OddRefusal(v.Odd)
		switch v.Kind {
		case jsonrpc.Request:
			return Screened{Answer: mcpmsg.AppendError(nil, v.ID, oddCode(v.Odd), why), Why: why}
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
				return Screened{Drop: true, Why: "a batch of notifications: " + why}
			}
			return Screened{Answer: append(out, ']'), Why: why}
		case jsonrpc.Notification:
			return Screened{Drop: true, Why: "a notification: " + why}
		}
	}
	if m.heldNotification(v) {
		return Screened{Drop: true, Why: "a tools/call notification of " + v.Call.Name + ": a write is checked only as a request, which has an answer"}
	}
	ev, ok := RequestOf(v)
	if !ok {
		return Screened{}
	}
	sc := Screened{Req: ev, Learn: true, Held: ev.Method == mcpmsg.MethodToolsCall && m.Holds(ev.Call.Name)}
	if sc.Held {
		if why := m.heldOdd(v); why != "" {
			return Screened{Answer: mcpmsg.AppendError(nil, v.ID, -32602, why), Why: why}
		}
	}
	return sc
}

// heldOdd says why a held call is refused before any rule reads it: a
// member of a write's arguments that two common decoders read differently,
// or a line that is JSON only to a lenient decoder; "" when there is none.
// hoist_commit's own arguments are the proxy's to read (its calls' are
// checked one by one, commitNext).
func (m *Machine) heldOdd(v mcpmsg.View) string {
	if p := v.ArgsOdd(); p != "" && m.gd != nil && m.gd.writes[v.Call.Name] {
		return OddRefusal(p)
	}
	if v.Forgiven != "" {
		return "refused: this call is not valid JSON (" + v.Forgiven + "), which some servers read anyway and others refuse, so hoist-mcp does not send it"
	}
	return ""
}

// heldNotification reports whether v is a tools/call sent as a
// notification, without an id, of a tool the proxy holds: it could be
// neither refused nor answered, so it is never forwarded.
func (m *Machine) heldNotification(v mcpmsg.View) bool {
	return v.Kind == jsonrpc.Notification && v.Method == mcpmsg.MethodToolsCall && m.Holds(v.Call.Name)
}

// OddRefusal is the error for a message whose member at path two common
// decoders read differently: it names the member, for the host's author.
func OddRefusal(path string) string {
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

// onHold decides on a held call: hoist_commit is the proxy's to run; a
// call a limit stops, or a write an enforced rule refuses, is answered
// with the refusal; a write the judge must see waits for its own verdict
// (taken, and forwarded by the Machine later); any other goes on to the
// server, and the Machine learns of it as of every call.
func (m *Machine) onHold(ev *Held) (taken bool) {
	h := ev.Req
	if mcpmsg.IsModern(h.Version) {
		m.version = h.Version
	}
	if m.park(ev) {
		return true // decided once the proxy's own tools/list is answered
	}
	m.hear(ev.Heard)
	if h.Call.Name == mcpmsg.CommitTool && m.commit != nil && !m.commit.listed {
		m.startCommit(h)
		return true
	}
	id := json.RawMessage(h.ID)
	if why := m.gate(id, nil, h.Call); why != "" {
		m.refuse(id, h.Call, why)
		return true
	}
	if m.gd == nil || !m.gd.writes[h.Call.Name] {
		m.lim.take(h.Call.Name, m.now())
		m.onHost(h) // a call only a limit counts, or the server's own hoist_commit
		return false
	}
	c, took := m.checkCall(h.Call)
	if m.judges(c) {
		m.logCheck(id, nil, h.Call, c, took)
		// In flight while the judge thinks: the writes checked meanwhile
		// see it, as they would once it was sent, and the limits count it.
		m.gd.s.Sent(h.Call.Name, h.Call.Args)
		m.lim.take(h.Call.Name, m.now())
		m.startJudge(&Judging{hold: ev, ID: id, Call: h.Call}, c)
		return true
	}
	if c.Refused != nil {
		m.answer(mcpmsg.AppendToolResult(nil, id, c.Refusal(), true, nil))
		taken = true
	} else {
		m.gd.s.Sent(h.Call.Name, h.Call.Args)
		m.lim.take(h.Call.Name, m.now())
		m.onHost(h)
	}
	m.logCheck(id, nil, h.Call, c, took)
	return taken
}

// gate returns why a call may not go on to the server before any policy
// reads it: the session held or the tool hidden by the pins, or a limit
// it is over; "" when nothing stops it. A limit's refusal goes to the
// guards log, beside the guards' checks: id is the call's (nil for a step
// of hoist_commit), commit the hoist_commit it was made for.
func (m *Machine) gate(id, commit json.RawMessage, call mcpmsg.Call) string {
	if why := m.pinGate(call.Name); why != "" {
		return why
	}
	r := m.lim.over(call.Name, m.now())
	if r == nil {
		return ""
	}
	m.logLimit(id, commit, call, r)
	return r.Text
}

// refuse answers the agent's call id with the tool error why, unsent, and
// says so.
func (m *Machine) refuse(id json.RawMessage, call mcpmsg.Call, why string) {
	m.answer(mcpmsg.AppendToolResult(nil, id, why, true, nil))
	m.say("refused %s: %s", call.Name, why)
}

// hear gives the guards the conversation's new lines.
func (m *Machine) hear(lines [][]byte) {
	if m.gd == nil {
		return
	}
	for _, l := range lines {
		if role, text, ok := mcpmsg.ReadChat(l); ok {
			m.gd.s.Message(role, text)
		}
	}
}

// check asks the guards about a call and logs their verdicts: id is the
// call's, commit the hoist_commit it was made for (nil for the agent's
// own).
func (m *Machine) check(id, commit json.RawMessage, call mcpmsg.Call) guards.Check {
	c, took := m.checkCall(call)
	m.logCheck(id, commit, call, c, took)
	return c
}

// checkCall returns the guards' verdicts on a call and how long they took.
// The confirmation judge, when on, is asked next, from c.Confirmation
// (judges, startJudge): the word list's verdict is only logged.
func (m *Machine) checkCall(call mcpmsg.Call) (guards.Check, time.Duration) {
	start := m.now()
	c := m.gd.s.Check(call.Name, call.Args)
	return c, m.now().Sub(start)
}

// logCheck writes a write's verdicts to the guards log, and says so when a
// rule refused it.
func (m *Machine) logCheck(id, commit json.RawMessage, call mcpmsg.Call, c guards.Check, took time.Duration) {
	if m.cfg.GuardsLog && c.Write {
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
		m.logJSON(GuardsLog, line)
	}
	if c.Refused != nil {
		m.say("guards: refused %s (policy check %s)", call.Name, c.Refused.Rule)
	}
}

// learn takes the answer msg to one of the agent's calls as facts.
func (m *Machine) learn(msg jsonrpc.Message) {
	call, ok := m.gd.calls[string(msg.ID)]
	if !ok {
		return
	}
	delete(m.gd.calls, string(msg.ID))
	if msg.Result != nil && mcpmsg.InputRequired(msg.Result) {
		return // not an answer: the host sends the call again
	}
	res := mcpmsg.ResultOf(msg)
	m.gd.s.Result(call.Name, call.Args, res.Text(), res.IsError)
}
