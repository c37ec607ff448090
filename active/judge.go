package active

import (
	"encoding/json"
	"strings"

	"github.com/hoist-mcp/hoist/guards"
	"github.com/hoist-mcp/hoist/judge"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
	"github.com/hoist-mcp/hoist/oracle"
)

// The confirmation judge's handlers (--confirm-judge): a write a
// confirmation rule read waits for the model's verdict on its own, asked
// off the Machine (Judge), while every other line goes on (issue 23,
// point 4).

// ErrSessionEnded is the JSON-RPC error code of a request the proxy held
// when its session ended: the server's implementation-defined range
// (-32000 to -32099), as a request that cannot be completed.
const ErrSessionEnded = -32000

// commitJudging is a commitRun's wait while the judge considers its call.
const commitJudging = "judge"

// judges reports whether the judge is asked about a write: one a
// confirmation rule read and no enforced rule refused (the judge refuses
// nothing the guards already do).
func (m *Machine) judges(c guards.Check) bool {
	return m.gd != nil && m.gd.judge != nil && c.Confirmation != nil && c.Refused == nil
}

// startJudge asks the judge about a held write. The agent's write waits
// for its own verdict alone: the transport is told at once that the proxy
// takes the line over, and the Machine forwards the write itself once the
// judge lets it through.
func (m *Machine) startJudge(j *Judging, c guards.Check) {
	for _, v := range c.Verdicts {
		if strings.HasSuffix(v.Rule, ".confirmed") {
			j.rule, j.words = v.Rule, v.Outcome
		}
	}
	j.Conf, j.start = *c.Confirmation, m.now()
	if j.hold != nil {
		m.judging[string(j.ID)] = j.hold
	}
	m.emit(Judge{J: j})
}

// unjudge answers each write the judge still holds with a JSON-RPC error,
// unsent: the host or the session has ended, why says which, and the
// verdict would come too late (issue 23, point 5).
func (m *Machine) unjudge(why string) {
	for id, h := range m.judging {
		delete(m.judging, id)
		msg := why + " before the confirmation judge answered, so " + h.Req.Call.Name + " was not sent to the MCP server"
		m.answer(mcpmsg.AppendError(nil, json.RawMessage(id), ErrSessionEnded, msg))
		m.say("confirmation judge: %s", msg)
	}
}

// onJudged takes the judge's verdict on a write: refused when the judge
// enforces and the answers fail it, else sent on to the server. The write
// has counted as sent since the judge began (startJudge's callers), so a
// refused one is given to the guards as the failed call the agent sees.
func (m *Machine) onJudged(ev Judged) {
	j := ev.J
	waited := m.now().Sub(j.start)
	refuse := m.gd.judge.Enforce && ev.Verdict.Fails
	refusal := ""
	if refuse {
		refusal = ev.Verdict.Refusal(j.Call.Name)
	}
	// The approval must be of the call about to be sent: the held line as
	// the server will read it, or the commit's call.
	unbound := ""
	if !ev.Verdict.Fails {
		if err := ev.Verdict.Approval.Passes(m.sentDigest(j), m.gd.judge.Policy, m.now()); err != nil {
			unbound = err.Error()
			m.say("confirmation judge: the approval of %s does not hold: %s", j.Call.Name, unbound)
			if m.gd.judge.Enforce {
				refuse = true
				refusal = guards.RefusalPrefix + j.Call.Name + " was not run and nothing changed: the confirmation judge's approval does not hold for this call (" + unbound + ")."
			}
		}
	}
	switch {
	case j.hold != nil:
		if m.judging[string(j.ID)] != j.hold {
			return // answered already: the host or the session ended
		}
		delete(m.judging, string(j.ID))
		if refuse {
			m.answer(mcpmsg.AppendToolResult(nil, j.ID, refusal, true, nil))
		} else {
			m.release(j)
		}
	case j.run != nil:
		r := j.run
		if !m.commitJudging(r) {
			// The commit is over (the server closed meanwhile): the call
			// was never sent, and the judgment stopped nothing.
			m.gd.s.Result(j.Call.Name, j.Call.Args, "not sent", true)
			refuse, refusal = false, ""
			break
		}
		if refuse {
			r.wait = ""
			step := &r.steps[r.at]
			step.Status, step.Text = mcpmsg.CommitRefused, refusal
			r.at++
		} else {
			m.release(j)
		}
	}
	if refuse {
		m.gd.s.Result(j.Call.Name, j.Call.Args, refusal, true)
		m.say("confirmation judge: refused %s (p_yes %.2f)", j.Call.Name, ev.Verdict.First.PYes)
	}
	m.logJudgment(ev, refuse, refusal, unbound, waited.Microseconds())
	if j.run != nil && refuse {
		m.commitNext()
	}
}

// commitJudging reports whether the commit r still waits for the judge's
// verdict on its call.
func (m *Machine) commitJudging(r *commitRun) bool {
	return m.commit != nil && len(m.commit.runs) > 0 && m.commit.runs[0] == r && r.wait == commitJudging
}

// release sends on a write the judge let through, if the pinned tools
// (--pin-tools) still let it: the session may have been held, or the tool
// hidden, while the judge thought, and a listing of the changed tools in
// flight makes it wait for that listing's answer, as a call does (park).
// Refused, it is answered as the pins answer a call; the guards see it as
// the failed call the agent sees, since it counted as sent from the
// judge's start.
func (m *Machine) release(j *Judging) {
	if m.park(&released{j}) {
		return
	}
	if why := m.pinGate(j.Call.Name); why != "" {
		m.say("refused %s: %s", j.Call.Name, why)
		m.gd.s.Result(j.Call.Name, j.Call.Args, why, true)
		if j.hold != nil {
			m.answer(mcpmsg.AppendToolResult(nil, j.ID, why, true, nil))
			return
		}
		if r := j.run; m.commitJudging(r) {
			r.wait = ""
			step := &r.steps[r.at]
			step.Status, step.Text = mcpmsg.CommitRefused, why
			r.at++
			m.commitNext()
		}
		return
	}
	if j.hold != nil {
		m.emit(ToServer{Line: append(j.hold.Line, '\n')})
		m.onHost(j.hold.Req)
		return
	}
	if r := j.run; m.commitJudging(r) {
		r.wait = ""
		m.sendCommitCall(r, j.ID, j.Call)
	}
}

// sentDigest returns the digest of the call a judged write sends: the held
// line as the server will read it, or the commit's call.
func (m *Machine) sentDigest(j *Judging) string {
	if j.hold != nil {
		v := mcpmsg.ReadView(j.hold.Line)
		return judge.CallDigest(v.Method, v.Call.Name, v.Call.Args)
	}
	return judge.CallDigest(mcpmsg.MethodToolsCall, j.Call.Name, j.Call.Args)
}

// logJudgment writes one judgment to the confirm log, with the approval
// the verdict gave and, when it did not hold, why (unbound).
func (m *Machine) logJudgment(ev Judged, enforced bool, refusal, unbound string, waitedUS int64) {
	if !m.cfg.ConfirmLog {
		return
	}
	j, v := ev.J, ev.Verdict
	line := mcplog.ConfirmJudgment{Type: mcplog.TypeJudgment, ID: j.ID, Tool: j.Call.Name, Args: j.Call.Args,
		Rule: j.rule, WordList: string(j.words), Failed: v.Fails, Enforced: enforced, Refusal: refusal,
		WaitedUS: waitedUS, ApprovalRefused: unbound}
	if v.Approval.Digest != "" {
		line.Approval, _ = json.Marshal(v.Approval)
	}
	if j.run != nil {
		line.Commit = j.run.id
	}
	if len(line.Args) == 0 {
		line.Args = json.RawMessage("{}")
	}
	line.Answers = append(line.Answers, confirmAnswer(string(oracle.KindConfirm), v.First, false))
	if s := v.Second; s != nil {
		line.Answers = append(line.Answers, confirmAnswer(string(v.SecondKind), *s, v.SecondShadow))
	}
	for _, mm := range judge.ProposalCheck(j.Conf, j.Call.Args) {
		line.ProposalCheck = append(line.ProposalCheck, mcplog.ConfirmMismatch{Argument: mm.Argument, Value: mm.Value, Named: mm.Named})
	}
	m.logJSON(ConfirmLog, line)
}

// confirmAnswer is an oracle answer as the confirm log holds it.
func confirmAnswer(question string, a oracle.Answer, shadow bool) mcplog.ConfirmAnswer {
	out := mcplog.ConfirmAnswer{Question: question, Key: a.Key, Answered: a.Answered, From: string(a.From), Cached: a.Cached,
		Why: string(a.Why), Reason: a.Reason, SecondShadow: shadow}
	if a.Answered {
		p := a.PYes
		out.PYes = &p
	}
	return out
}
