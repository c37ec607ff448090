package episode

import (
	"encoding/json"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// hoist_commit in an episode (issue 10, "episodes show the inner calls as
// calls of that turn"). hoist-mcp --commit makes the calls of one of the
// agent's hoist_commit calls as requests of its own, ids hoist-commit-<n>:
// they are the agent's calls, which it asked for in the turn of that
// hoist_commit, not a flow's lookups. They join its turn by the first rule
// of InferTurns, since the hoist_commit awaits its answer while they run.
// A call the policy check refused never reached the server, so the log
// holds no request for it; the hoist_commit's answer names it, and it is
// added as the agent's call with the refusal as its error result, as a
// refused call the agent made itself reads.

// callerOf returns who made a tools/call logged from from with id: the
// proxy's own calls are a flow's lookups, but for those it made for a
// hoist_commit.
func callerOf(from string, id json.RawMessage) Actor {
	if from == mcplog.FromProxy && !mcpmsg.IsCommitID(id) {
		return Proxy
	}
	return Agent
}

// commitRefused adds the call a hoist_commit's answer m (the proxy's) says
// the policy check refused, just before that answer: a refusal stops the
// commit, so it was the last call tried.
func (b *builder) commitRefused(li int, t int64, commit *Call, m jsonrpc.Message) {
	if commit.Tool != b.toolName(li, mcpmsg.CommitTool) || m.Result == nil {
		return
	}
	for _, s := range mcpmsg.ReadCommitResult(mcpmsg.ResultOf(m).Structured) {
		if s.Status != mcpmsg.CommitRefused {
			continue
		}
		c := b.addCall(li, t, nil, s.Name, s.Args, Agent)
		res := &Result{CallIndex: c.Index, Text: s.Text, IsError: true}
		c.Result = res
		b.ep.Events = append(b.ep.Events, Event{Type: EventResult, TMS: t, Result: res})
		b.answerStep[c.Index] = len(b.steps)
		b.steps = append(b.steps, Step{Kind: StepAnswer, TMS: t, Call: c.Index, Text: res.Text})
	}
}
