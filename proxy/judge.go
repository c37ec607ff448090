package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hoist-mcp/hoist/guards"
	"github.com/hoist-mcp/hoist/judge"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
	"github.com/hoist-mcp/hoist/oracle"
)

// JudgeOptions put each write a confirmation rule checks to the System-One
// model too (hoist-mcp --confirm-judge, under --guards; manual, "Active
// mode"): did the customer's reply explicitly agree to this exact change?
type JudgeOptions struct {
	// Judge asks the questions: its oracle (shared by every session of the
	// process), threshold and second question.
	Judge judge.Judge
	// Enforce refuses a write the judge fails; otherwise judgments are
	// only logged (--confirm-judge log).
	Enforce bool
	// Questions is how many questions one session may ask
	// (--confirm-questions); once spent, the judge has no answer and
	// refuses nothing.
	Questions int
	// Log is the confirm log's path ({session} stands for the session); ""
	// means <session>.confirm.jsonl beside the session log, or none.
	Log string
}

// DefaultConfirmQuestions is --confirm-questions' default.
const DefaultConfirmQuestions = 100

// judgeState is --confirm-judge in one session, owned by the active loop
// but for what its goroutines read: j and ctx, set before start.
type judgeState struct {
	j       judge.Judge
	enforce bool
	log     *mcplog.Writer
	own     bool // log was made for this session alone, beside its session log
	// ctx ends the questions in flight when the session closes.
	ctx    context.Context
	cancel context.CancelFunc
}

// judgedEvent brings the owner the judge's verdict on a write it held: the
// agent's own (hold), or the call of a hoist_commit (run).
type judgedEvent struct {
	hold  *holdEvent
	run   *commitRun
	id    json.RawMessage // the call's id, as in the guards log
	call  mcpmsg.Call
	rule  string         // the confirmation rule
	words guards.Outcome // its word list's verdict
	conf  guards.Confirmation
	v     judge.Verdict
	start time.Time // when the write began to wait for the judge
}

// commitJudging is a commitRun's wait while the judge considers its call.
const commitJudging = "judge"

// newJudgeState prepares a session's judge, its budget of questions and
// its log: --confirm-log FILE ({session} standing for the session),
// appended to, since sessions may share it; else <session>.confirm.jsonl
// beside the session log, made new; else none.
func newJudgeState(o *JudgeOptions, rec *mcplog.Writer, session string) (*judgeState, error) {
	if o == nil {
		return nil, nil
	}
	s := &judgeState{j: o.Judge, enforce: o.Enforce}
	s.j.Oracle = oracle.Limit(o.Judge.Oracle, o.Questions)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	var err error
	switch {
	case o.Log != "":
		s.log, err = mcplog.AppendJSONL(SessionPath(o.Log, session))
	case rec != nil:
		s.log, err = mcplog.CreateJSONL(strings.TrimSuffix(rec.Path(), ".jsonl") + mcplog.ConfirmSuffix)
		s.own = err == nil
	}
	if err != nil {
		s.cancel()
		return nil, fmt.Errorf("confirm log: %w", err)
	}
	return s, nil
}

// removeOwn removes the confirm log of a session that never started, when
// it was this session's own.
func (s *judgeState) removeOwn() {
	if s != nil && s.log != nil && s.own {
		os.Remove(s.log.Path())
	}
}

// close ends the questions in flight and closes the log, once the loop has
// returned.
func (s *judgeState) close() error {
	if s == nil {
		return nil
	}
	s.cancel()
	if s.log == nil {
		return nil
	}
	return s.log.Close()
}

// cancelJudge ends the judge's questions in flight, once the loop has
// returned: nobody will take their verdicts.
func (a *active) cancelJudge() {
	if a.gd != nil && a.gd.jd != nil {
		a.gd.jd.cancel()
	}
}

// judges reports whether the judge is asked about a write: one a
// confirmation rule read and no enforced rule refused (the judge refuses
// nothing the guards already do).
func (a *active) judges(c guards.Check) bool {
	return a.gd != nil && a.gd.jd != nil && c.Confirmation != nil && c.Refused == nil
}

// startJudge asks the judge about a held write on a goroutine of its own,
// so that the owner goes on meanwhile. The agent's write waits for its own
// verdict alone: the transport is told at once that the proxy takes the
// line over, and goes on with the host's next lines, and the owner
// forwards the write itself once the judge lets it through (issue 23,
// point 4). The verdict comes back to the owner as a judgedEvent.
func (a *active) startJudge(ev judgedEvent, c guards.Check) {
	for _, v := range c.Verdicts {
		if strings.HasSuffix(v.Rule, ".confirmed") {
			ev.rule, ev.words = v.Rule, v.Outcome
		}
	}
	jd := a.gd.jd
	ev.conf, ev.start = *c.Confirmation, time.Now()
	if ev.hold != nil {
		a.judging[string(ev.id)] = ev.hold
		ev.hold.taken <- true
	}
	a.offload(jd.ctx, func(ctx context.Context) any {
		ev.v = jd.j.Ask(ctx, ev.call.Name, ev.call.Args, ev.conf)
		return ev
	})
}

// unjudge answers each write the judge still holds with a JSON-RPC error,
// unsent: the host or the session has ended, why says which, and the
// verdict would come too late (issue 23, point 5).
func (a *active) unjudge(why string) {
	for id, h := range a.judging {
		delete(a.judging, id)
		msg := why + " before the confirmation judge answered, so " + h.host.call.Name + " was not sent to the MCP server"
		a.answer(mcpmsg.AppendError(nil, json.RawMessage(id), errSessionEnded, msg))
		a.say("confirmation judge: %s", msg)
	}
}

// errSessionEnded is the JSON-RPC error code of a request the proxy held
// when its session ended: the server's implementation-defined range
// (-32000 to -32099), as a request that cannot be completed.
const errSessionEnded = -32000

// onJudged takes the judge's verdict on a write: refused when the judge
// enforces and the answers fail it, else sent on to the server. The write
// has counted as sent since the judge began (startJudge's callers), so a
// refused one is given to the guards as the failed call the agent sees.
func (a *active) onJudged(ev judgedEvent) {
	waited := time.Since(ev.start)
	jd := a.gd.jd
	refuse := jd.enforce && ev.v.Fails
	refusal := ""
	if refuse {
		refusal = ev.v.Refusal(ev.call.Name)
	}
	switch {
	case ev.hold != nil:
		if a.judging[string(ev.id)] != ev.hold {
			return // answered already: the host or the session ended
		}
		delete(a.judging, string(ev.id))
		if refuse {
			a.answer(mcpmsg.AppendToolResult(nil, ev.id, refusal, true, nil))
		} else {
			a.forward(ev.hold.line)
			a.onHost(ev.hold.host)
		}
	case ev.run != nil:
		r := ev.run
		if a.commit == nil || len(a.commit.runs) == 0 || a.commit.runs[0] != r || r.wait != commitJudging {
			// The commit is over (the server closed meanwhile): the call
			// was never sent, and the judgment stopped nothing.
			a.gd.s.Result(ev.call.Name, ev.call.Args, "not sent", true)
			refuse, refusal = false, ""
			break
		}
		r.wait = ""
		if refuse {
			step := &r.steps[r.at]
			step.Status, step.Text = mcpmsg.CommitRefused, refusal
			r.at++
		} else {
			a.sendCommitCall(r, ev.id, ev.call)
		}
	}
	if refuse {
		a.gd.s.Result(ev.call.Name, ev.call.Args, refusal, true)
		a.say("confirmation judge: refused %s (p_yes %.2f)", ev.call.Name, ev.v.First.PYes)
	}
	a.logJudgment(ev, refuse, refusal, waited)
	if ev.run != nil && refuse {
		a.commitNext()
	}
}

// logJudgment writes one judgment to the confirm log.
func (a *active) logJudgment(ev judgedEvent, enforced bool, refusal string, waited time.Duration) {
	jd := a.gd.jd
	if jd.log == nil {
		return
	}
	line := mcplog.ConfirmJudgment{Type: mcplog.TypeJudgment, ID: ev.id, Tool: ev.call.Name, Args: ev.call.Args,
		Rule: ev.rule, WordList: string(ev.words), Failed: ev.v.Fails, Enforced: enforced, Refusal: refusal,
		WaitedUS: waited.Microseconds()}
	if ev.run != nil {
		line.Commit = ev.run.id
	}
	if len(line.Args) == 0 {
		line.Args = json.RawMessage("{}")
	}
	line.Answers = append(line.Answers, confirmAnswer(string(oracle.KindConfirm), ev.v.First, false))
	if s := ev.v.Second; s != nil {
		line.Answers = append(line.Answers, confirmAnswer(string(ev.v.SecondKind), *s, ev.v.SecondShadow))
	}
	for _, m := range judge.ProposalCheck(ev.conf, ev.call.Args) {
		line.ProposalCheck = append(line.ProposalCheck, mcplog.ConfirmMismatch{Argument: m.Argument, Value: m.Value, Named: m.Named})
	}
	if b, err := json.Marshal(line); err == nil {
		jd.log.Append(b)
	} else {
		a.say("confirm log: %v", err)
	}
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
