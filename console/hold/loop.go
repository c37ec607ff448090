package hold

import (
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// LoopRun is how many back-to-back identical calls of one tool make a
// loop: the third is held before it reaches the server.
const LoopRun = 3

// Loop is the loop hold of one host session: it holds the LoopRun-th
// back-to-back call of one tool with identical arguments (no other tool
// call in between), so a tool called now and then across a long session
// is never held. Arguments compare as JSON values (mcpmsg.CallKey), and
// the request's _meta, where clients put a fresh progressToken, is not
// part of them. Allowed tools (polled on purpose) are never held.
//
// A Loop is owned by the goroutine that sees the session's requests in
// order; it is not safe for concurrent use.
type Loop struct {
	allow map[string]bool
	last  string
	run   int
}

// NewLoop returns a loop hold that never holds the allowed tools.
func NewLoop(allow ...string) *Loop {
	l := &Loop{allow: map[string]bool{}}
	for _, t := range allow {
		l.allow[t] = true
	}
	return l
}

// Call is told of each tools/call request's params, in order, and says
// whether to hold it.
func (l *Loop) Call(params []byte) bool {
	c := mcpmsg.ReadCall(params)
	key := mcpmsg.CallKey(c.Name, c.Args)
	if key == l.last {
		l.run++
	} else {
		l.last, l.run = key, 1
	}
	return l.run >= LoopRun && !l.allow[c.Name]
}
