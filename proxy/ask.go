package proxy

import (
	"time"

	"github.com/hoist-mcp/hoist/oracle"
)

// FlowOracle is who answers a flow's questions (hoist-mcp --oracle with
// --flow; manual, "--flow-decider arbiter"): when the flow's arbiter has a
// weight for the System-One model's answer, each session asks it, about
// each lookup offered, whether the agent will use it, within
// FlowOptions.Caps.Questions (--flow-questions) per session. The answer
// joins the arbiter's combination, and the flow log's offer names the
// question's cache key and its answer.
//
// The questions are asked off the owner's goroutine (active.step, for the
// Machine's Step), under a
// context that the host's leaving or the session's close cancels: only the
// agent's answer the decision is about waits for them, and every other
// line goes on. A decision's questions are asked at once and waited for at
// most Timeout together, and the oracle answers from its cache first, so a
// cached answer adds no network wait at all.
type FlowOracle struct {
	// Oracle answers; nil asks nothing. It is shared by every session of
	// a --listen proxy (each has its own budget) and with the confirmation
	// judge: one oracle over one cache.
	Oracle oracle.Oracle
	// Timeout bounds the wait for one decision's questions; 0 is
	// oracle.DefaultTimeout.
	Timeout time.Duration
}
