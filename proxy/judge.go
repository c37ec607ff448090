package proxy

import (
	"context"
	"fmt"
	machine "github.com/hoist-mcp/hoist/active"
	"os"
	"strings"

	"github.com/hoist-mcp/hoist/judge"
	"github.com/hoist-mcp/hoist/mcplog"
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

// judgeState is --confirm-judge's side of one session in the proxy: the
// judge the Machine's Judge actions ask, its log and the context of its
// questions, all set before start.
type judgeState struct {
	j       judge.Judge
	enforce bool
	log     *mcplog.Writer
	own     bool // log was made for this session alone, beside its session log
	// ctx ends the questions in flight when the session closes.
	ctx    context.Context
	cancel context.CancelFunc
}

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

// startJudge asks the judge about a write the Machine holds, on a
// goroutine of its own, under the judge's context, which the session's
// close ends; the verdict comes back to the owner as an event.
func (a *active) startJudge(j *machine.Judging) {
	jd := a.gd.jd
	a.offload(jd.ctx, func(ctx context.Context) machine.Event {
		return machine.Judged{J: j, Verdict: jd.j.Ask(ctx, j.Call.Name, j.Call.Args, j.Conf)}
	})
}
