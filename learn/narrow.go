package learn

import (
	"github.com/hoist-mcp/hoist/binding"
	"github.com/hoist-mcp/hoist/flow"
)

// A fan-out over every element of a list ([*]) narrowed to the elements
// the customer named ([said], binding.Narrow) is counted beside it, where
// the narrowing binds: the calls the narrowed fan-out would have made and
// how many the agent made, and the same of the whole fan-out in those
// occurrences. Serving narrows where the narrowed fan-out earned more
// there (flow.Narrow): a customer who named one reservation is looked up
// that one, when agents then check that one only (issue 26, lever 3).

type narrowAcc struct {
	calls, used, allCalls, allUsed flow.Count
}

// countNarrowed counts one occurrence of a fan-out tuple, which made calls
// and reproduced used of the agent's, narrowed.
func (l *Learner) countNarrowed(ta *tupleAcc, names []string, exprs map[string]binding.Expr, scope *binding.Scope, actual, asked map[string]bool, fold, used, calls int) {
	n, ok := binding.Narrow(names, exprs)
	if !ok {
		return
	}
	nu, nc := tupleUse(names, n, scope, actual, asked)
	if nc == 0 {
		return // nothing named: served the whole fan-out
	}
	if ta.narrow == nil {
		k := l.opt.Folds
		ta.narrow = &narrowAcc{calls: flow.NewCount(k), used: flow.NewCount(k), allCalls: flow.NewCount(k), allUsed: flow.NewCount(k)}
	}
	ta.narrow.calls.AddN(fold, nc)
	ta.narrow.used.AddN(fold, nu)
	ta.narrow.allCalls.AddN(fold, calls)
	ta.narrow.allUsed.AddN(fold, used)
}

// addNarrow adds o to a; either may be nil.
func addNarrow(a, o *narrowAcc) *narrowAcc {
	switch {
	case o == nil:
		return a
	case a == nil:
		return o
	}
	addCount(&a.calls, o.calls)
	addCount(&a.used, o.used)
	addCount(&a.allCalls, o.allCalls)
	addCount(&a.allUsed, o.allUsed)
	return a
}

// bound returns the counts as a flow writes them; nil for none.
func (n *narrowAcc) bound() *flow.Narrow {
	if n == nil {
		return nil
	}
	return &flow.Narrow{Calls: n.calls, Used: n.used, AllCalls: n.allCalls, AllUsed: n.allUsed}
}
