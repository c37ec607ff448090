package evaluate

import (
	"context"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
)

// Run is one run of a flow as its flow log recorded it: the decisions made,
// in order, after one of the agent's calls returned.
type Run struct {
	// Server is the index, in the episode's Servers, of the server whose
	// proxy made the decisions.
	Server int
	// Call is the tool whose result was the run's site (the run line's
	// call), by the flow's name; "" when the run line is missing. Failed
	// and MaxLookups are the run line's too: whether that result was an
	// error, and the lookups the run could take (the caps left).
	Call       string
	Failed     bool
	MaxLookups int
	Decisions  []flow.Decision
}

// Session is one episode and the runs its flow logs hold, in log order.
type Session struct {
	Episode *episode.Episode
	Runs    []Run
}

// Source yields the sessions that have logged decisions. Implementations
// are safe for concurrent use; each call streams its own results, in a
// stable order, until fn returns an error (which Sessions returns).
type Source interface {
	Sessions(ctx context.Context, fn func(Session) error) error
}

// Sessions is a Source over sessions held in memory.
type Sessions []Session

var _ Source = Sessions(nil)

// Sessions calls fn with each session in order.
func (s Sessions) Sessions(ctx context.Context, fn func(Session) error) error {
	for _, x := range s {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(x); err != nil {
			return err
		}
	}
	return nil
}
