package proxy

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// --commit (manual, "Active mode"): hoist_commit is added to the tools the
// server lists, and a sentence on when to use it to the server's
// instructions. A call of it never reaches the server: the proxy makes its
// calls in order, as requests of its own (ids hoist-commit-<n>), each
// checked by the guards first when --guards is on, stops at the first that
// is refused or fails, and answers with every call's result and the calls
// it did not run. Everything runs on the active loop, one commit at a time:
// a hoist_commit sent while another runs waits for it.

// commitState is --commit in one session, owned by the active loop.
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
func (a *active) startCommit(h hostEvent) {
	id := json.RawMessage(h.id)
	calls, err := mcpmsg.ReadCommit(h.call.Args)
	if err != nil {
		a.answer(mcpmsg.AppendToolResult(nil, id, "hoist_commit made no call: "+err.Error(), true, nil))
		return
	}
	r := &commitRun{id: id, steps: make([]mcpmsg.CommitStep, len(calls))}
	for i, c := range calls {
		r.steps[i].CommitCall = c
	}
	a.commit.runs = append(a.commit.runs, r)
	if len(a.commit.runs) == 1 {
		a.commitNext()
	}
}

// commitNext makes the next call of the commit in line, or answers the
// commits that are over.
func (a *active) commitNext() {
	for len(a.commit.runs) > 0 {
		r := a.commit.runs[0]
		if r.wait != "" {
			return // a call is in flight
		}
		if r.at >= len(r.steps) || r.at > 0 && r.steps[r.at-1].Status != mcpmsg.CommitDone {
			a.endCommit(r)
			continue
		}
		step := &r.steps[r.at]
		if a.gone {
			step.Status, step.Text = mcpmsg.CommitFailed, "the MCP server has closed: the call was not sent"
			r.at++
			continue
		}
		call := mcpmsg.Call{Name: step.Name, Args: step.Args}
		id := a.nextCommitID()
		if a.gd != nil && a.gd.writes[call.Name] {
			if p := jsontext.OddName(call.Args); p != "" {
				// The proxy sends these arguments as they were written:
				// the server must read them as the guards do (issue 23).
				step.Status, step.Text = mcpmsg.CommitRefused, oddRefusal("calls["+strconv.Itoa(r.at)+"].arguments."+p)
				r.at++
				continue
			}
		}
		if a.gd != nil {
			c := a.check(id, r.id, call)
			if c.Refused != nil {
				step.Status, step.Text = mcpmsg.CommitRefused, c.Refusal()
				r.at++
				continue
			}
			if a.judges(c) {
				a.gd.s.Sent(call.Name, call.Args) // in flight while judged
				r.wait = commitJudging            // onJudged sends it, or refuses it
				a.startJudge(judgedEvent{run: r, id: id, call: call}, c)
				return
			}
			a.gd.s.Sent(call.Name, call.Args)
		}
		a.sendCommitCall(r, id, call)
		return
	}
}

// sendCommitCall sends the server a call of the commit r, as a request of
// the proxy's own, and waits for its answer (onCommitAnswer).
func (a *active) sendCommitCall(r *commitRun, id json.RawMessage, call mcpmsg.Call) {
	var meta []byte
	if mcpmsg.IsModern(a.version) {
		meta = mcpmsg.ModernMeta(a.version)
	}
	for !a.ids.Own(id) {
		// A host request of this id came while the call was judged.
		id = a.nextCommitID()
	}
	req := mcpmsg.AppendToolCallMeta(nil, id, call.Name, call.Args, meta)
	if a.rec != nil {
		a.rec.Record(mcplog.FromProxy, bytes.Clone(req))
	}
	r.wait = string(id)
	a.sends.Add(1)
	go func() {
		defer a.sends.Done()
		a.toServer(append(req, '\n'))
	}()
}

// onCommitAnswer takes the server's answer to a call of a commit: its
// result is the step's, the guards learn from it, and the commit goes on
// unless it failed. It reports whether a commit's call was waiting for id.
func (a *active) onCommitAnswer(id string, m jsonrpc.Message) bool {
	if a.commit == nil || len(a.commit.runs) == 0 || a.commit.runs[0].wait != id {
		return false // not a commit's call in flight
	}
	r := a.commit.runs[0]
	r.wait = ""
	step := &r.steps[r.at]
	r.at++
	if m.Result != nil && mcpmsg.InputRequired(m.Result) {
		step.Status, step.Text = mcpmsg.CommitFailed, "the MCP server asked for input, which hoist_commit cannot give: make this call on its own"
		a.commitNext()
		return true
	}
	res := mcpmsg.ResultOf(m)
	step.Status, step.Text = mcpmsg.CommitDone, res.Text()
	if res.IsError {
		step.Status = mcpmsg.CommitFailed
	}
	if a.gd != nil {
		a.gd.s.Result(step.Name, step.Args, step.Text, res.IsError)
	}
	a.commitNext()
	return true
}

// nextCommitID returns the id of a commit's next call: hoist-commit-<n>,
// the next n whose id no request in flight has (jsonrpc.IDs; it is taken
// when the call is sent).
func (a *active) nextCommitID() json.RawMessage {
	for {
		a.commit.n++
		if id := mcpmsg.CommitID(a.commit.n); a.ids.Free(id) {
			return id
		}
	}
}

// endCommit answers a commit: every call after the one that stopped it is
// not run.
func (a *active) endCommit(r *commitRun) {
	for i := r.at; i < len(r.steps); i++ {
		if r.steps[i].Status == "" {
			r.steps[i].Status = mcpmsg.CommitNotRun
		}
	}
	a.commit.runs = a.commit.runs[1:]
	a.answer(mcpmsg.AppendCommitResult(nil, r.id, r.steps))
}

// endCommits answers every commit once the server's output has ended: a
// call in flight will never be answered.
func (a *active) endCommits() {
	if a.commit == nil {
		return
	}
	for len(a.commit.runs) > 0 {
		r := a.commit.runs[0]
		if r.wait != "" {
			text := "the MCP server closed before it answered"
			if r.wait == commitJudging {
				text = "the MCP server has closed: the call was not sent"
			}
			r.wait = ""
			r.steps[r.at].Status, r.steps[r.at].Text = mcpmsg.CommitFailed, text
			r.at++
		}
		a.commitNext()
	}
}

// commitInstructions adds hoist_commit's sentence to the server's answer to
// initialize (or server/discover), and reports whether it did: the proxy
// then sends that answer itself.
func (a *active) commitInstructions(ev serverEvent) bool {
	if a.commit == nil || ev.m.Result == nil {
		return false
	}
	line, ok := mcpmsg.AppendInstructions(jsonrpc.TrimLine(ev.line), mcpmsg.CommitInstructions)
	if !ok {
		return false
	}
	a.answer(line)
	return true
}

// commitListed adds hoist_commit to the last page of the server's tools,
// and reports whether it did. A server that lists a hoist_commit of its own
// keeps it, and the proxy says so.
func (a *active) commitListed(ev serverEvent) bool {
	if a.commit == nil || ev.m.Result == nil {
		return false
	}
	tools, next := mcpmsg.ReadTools(ev.m.Result)
	for _, t := range tools {
		if t.Name == mcpmsg.CommitTool {
			if !a.commit.listed {
				a.say("commit: the MCP server lists a tool hoist_commit of its own; --commit adds none")
			}
			a.commit.listed = true
		}
	}
	if next != "" || a.commit.listed {
		return false
	}
	line, ok := mcpmsg.AppendTool(jsonrpc.TrimLine(ev.line), mcpmsg.CommitToolEntry)
	if !ok {
		return false
	}
	a.answer(line)
	return true
}
