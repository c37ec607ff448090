package active

import (
	"encoding/json"
	"strconv"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// --commit (manual, "Active mode"): hoist_commit is added to the tools the
// server lists, and a sentence on when to use it to the server's
// instructions. A call of it never reaches the server: the proxy makes its
// calls in order, as requests of its own (ids hoist-commit-<n>), each
// checked by the guards first when --guards is on, stops at the first that
// is refused or fails, and answers with every call's result and the calls
// it did not run. Everything runs on the Machine, one commit at a time:
// a hoist_commit sent while another runs waits for it.

// commitState is --commit in one session, owned by the Machine.
type commitState struct {
	// runs are the hoist_commit calls not yet answered; the first runs.
	runs []*commitRun
	n    uint64
	// listed is true once a server's tools/list named a tool hoist_commit
	// of its own, which the proxy then does not shadow.
	listed bool
}

// commitRun is one hoist_commit call.
type commitRun struct {
	id    json.RawMessage // the host's request id
	steps []mcpmsg.CommitStep
	at    int    // the step in flight, or next
	wait  string // the raw id of the call in flight, "" when none
}

// startCommit takes the agent's hoist_commit: its calls are queued and the
// first commit in line makes its next call.
func (m *Machine) startCommit(h Request) {
	id := json.RawMessage(h.ID)
	calls, err := mcpmsg.ReadCommit(h.Call.Args)
	if err != nil {
		m.answer(mcpmsg.AppendToolResult(nil, id, "hoist_commit made no call: "+err.Error(), true, nil))
		return
	}
	r := &commitRun{id: id, steps: make([]mcpmsg.CommitStep, len(calls))}
	for i, c := range calls {
		r.steps[i].CommitCall = c
	}
	m.commit.runs = append(m.commit.runs, r)
	if len(m.commit.runs) == 1 {
		m.commitNext()
	}
}

// commitNext makes the next call of the commit in line, or answers the
// commits that are over.
func (m *Machine) commitNext() {
	for len(m.commit.runs) > 0 {
		r := m.commit.runs[0]
		if r.wait != "" {
			return // a call is in flight
		}
		if r.at >= len(r.steps) || r.at > 0 && r.steps[r.at-1].Status != mcpmsg.CommitDone {
			m.endCommit(r)
			continue
		}
		step := &r.steps[r.at]
		if m.gone {
			step.Status, step.Text = mcpmsg.CommitFailed, "the MCP server has closed: the call was not sent"
			r.at++
			continue
		}
		if m.pinsListing() {
			// Checked against the changed tools first: onOwnList goes on.
			m.say("hoist_commit: %s waits for hoist-mcp's listing of the changed tools", step.Name)
			return
		}
		call := mcpmsg.Call{Name: step.Name, Args: step.Args}
		if why := m.gate(nil, r.id, call); why != "" {
			step.Status, step.Text = mcpmsg.CommitRefused, why
			m.say("refused %s in hoist_commit: %s", call.Name, why)
			r.at++
			continue
		}
		id := m.nextCommitID()
		if m.gd != nil && m.gd.writes[call.Name] {
			if p := jsontext.OddName(call.Args); p != "" {
				// The proxy sends these arguments as they were written:
				// the server must read them as the guards do (issue 23).
				step.Status, step.Text = mcpmsg.CommitRefused, OddRefusal("calls["+strconv.Itoa(r.at)+"].arguments."+p)
				r.at++
				continue
			}
		}
		if m.gd != nil {
			c := m.check(id, r.id, call)
			if c.Refused != nil {
				step.Status, step.Text = mcpmsg.CommitRefused, c.Refusal()
				r.at++
				continue
			}
			if m.judges(c) {
				m.gd.s.Sent(call.Name, call.Args) // in flight while judged
				m.lim.take(call.Name, m.now())
				r.wait = commitJudging // onJudged sends it, or refuses it
				m.startJudge(&Judging{run: r, ID: id, Call: call}, c)
				return
			}
			m.gd.s.Sent(call.Name, call.Args)
		}
		m.lim.take(call.Name, m.now())
		m.sendCommitCall(r, id, call)
		return
	}
}

// sendCommitCall sends the server a call of the commit r, as a request of
// the proxy's own, and waits for its answer (onCommitAnswer).
func (m *Machine) sendCommitCall(r *commitRun, id json.RawMessage, call mcpmsg.Call) {
	var meta []byte
	if mcpmsg.IsModern(m.version) {
		meta = mcpmsg.ModernMeta(m.version)
	}
	for !m.cfg.IDs.Own(id) {
		// A host request of this id came while the call was judged.
		id = m.nextCommitID()
	}
	req := mcpmsg.AppendToolCallMeta(nil, id, call.Name, call.Args, meta)
	r.wait = string(id)
	m.emit(ToServer{Line: append(req, '\n'), Own: true})
}

// onCommitAnswer takes the server's answer to a call of a commit: its
// result is the step's, the guards learn from it, and the commit goes on
// unless it failed. It reports whether a commit's call was waiting for id.
func (m *Machine) onCommitAnswer(id string, msg jsonrpc.Message) bool {
	if m.commit == nil || len(m.commit.runs) == 0 || m.commit.runs[0].wait != id {
		return false // not a commit's call in flight
	}
	r := m.commit.runs[0]
	r.wait = ""
	step := &r.steps[r.at]
	r.at++
	if msg.Result != nil && mcpmsg.InputRequired(msg.Result) {
		step.Status, step.Text = mcpmsg.CommitFailed, "the MCP server asked for input, which hoist_commit cannot give: make this call on its own"
		m.commitNext()
		return true
	}
	res := mcpmsg.ResultOf(msg)
	step.Status, step.Text = mcpmsg.CommitDone, res.Text()
	if res.IsError {
		step.Status = mcpmsg.CommitFailed
	}
	if m.gd != nil {
		m.gd.s.Result(step.Name, step.Args, step.Text, res.IsError)
	}
	m.commitNext()
	return true
}

// nextCommitID returns the id of a commit's next call: hoist-commit-<n>,
// the next n whose id no request in flight has (jsonrpc.IDs; it is taken
// when the call is sent).
func (m *Machine) nextCommitID() json.RawMessage {
	for {
		m.commit.n++
		if id := mcpmsg.CommitID(m.commit.n); m.cfg.IDs.Free(id) {
			return id
		}
	}
}

// endCommit answers a commit: every call after the one that stopped it is
// not run.
func (m *Machine) endCommit(r *commitRun) {
	for i := r.at; i < len(r.steps); i++ {
		if r.steps[i].Status == "" {
			r.steps[i].Status = mcpmsg.CommitNotRun
		}
	}
	m.commit.runs = m.commit.runs[1:]
	m.answer(mcpmsg.AppendCommitResult(nil, r.id, r.steps))
}

// endCommits answers every commit once the server's output has ended: a
// call in flight will never be answered.
func (m *Machine) endCommits() {
	if m.commit == nil {
		return
	}
	for len(m.commit.runs) > 0 {
		r := m.commit.runs[0]
		if r.wait != "" {
			text := "the MCP server closed before it answered"
			if r.wait == commitJudging {
				text = "the MCP server has closed: the call was not sent"
			}
			r.wait = ""
			r.steps[r.at].Status, r.steps[r.at].Text = mcpmsg.CommitFailed, text
			r.at++
		}
		m.commitNext()
	}
}

// commitInstructions adds hoist_commit's sentence to the server's answer to
// initialize (or server/discover), and reports whether it did: the proxy
// then sends that answer itself.
func (m *Machine) commitInstructions(ev Response) bool {
	if m.commit == nil || ev.Msg.Result == nil {
		return false
	}
	line, ok := mcpmsg.AppendInstructions(jsonrpc.TrimLine(ev.Line), mcpmsg.CommitInstructions)
	if !ok {
		return false
	}
	m.answer(line)
	return true
}

// commitListed adds hoist_commit to the last page of the server's tools,
// and reports whether it did. A server that lists a hoist_commit of its own
// keeps it, and the proxy says so.
func (m *Machine) commitListed(ev Response) bool {
	if m.commit == nil || ev.Msg.Result == nil {
		return false
	}
	tools, next := mcpmsg.ReadTools(ev.Msg.Result)
	for _, t := range tools {
		if t.Name == mcpmsg.CommitTool {
			if !m.commit.listed {
				m.say("commit: the MCP server lists a tool hoist_commit of its own; --commit adds none")
			}
			m.commit.listed = true
		}
	}
	if next != "" || m.commit.listed {
		return false
	}
	line, ok := mcpmsg.AppendTool(jsonrpc.TrimLine(ev.Line), mcpmsg.CommitToolEntry)
	if !ok {
		return false
	}
	m.answer(line)
	return true
}
