package learn

import (
	"cmp"

	"github.com/hoist-mcp/hoist/flow"
)

// The bindings a lookup keeps are chosen by what they earn, not by how
// many of the agent's calls they reproduce: a fan-out over every element
// reproduces more calls than the element the customer named, and makes
// many more that the agent did not want. Each binding is valued as the
// decider prices an offer (flow.BindingValue): a turn's value for each of
// the agent's calls it reproduced, less the detour cost, at the default
// threshold and scaled by the lookup's result size, for each call it made
// that the agent did not. The value is a function of the merged counts
// only, so a sharded learn keeps the same bindings.

// tupleValue returns the tuple's value over every fold.
func tupleValue(t *tupleAcc, la *lookupAcc) float64 {
	calls := t.matched.N
	if t.fan {
		calls = t.calls.N
	}
	return flow.BindingValue(t.support(), calls, flow.DefaultThreshold, detourScale(la))
}

// detourScale is how many detours of the quoted size a detour of the
// lookup's mean result is: at least one (flow.DetourBytes).
func detourScale(la *lookupAcc) float64 {
	if la.answered.N == 0 {
		return 1
	}
	return max(1, float64(la.bytes.N)/float64(la.answered.N)/flow.DetourBytes)
}

// compareByValue ranks a lookup's bindings: more value first, then as
// compareTuples does (more of the agent's calls, references before
// constants, then by text).
func compareByValue(la *lookupAcc) func(a, b *tupleAcc) int {
	return func(a, b *tupleAcc) int {
		if c := cmp.Compare(tupleValue(b, la), tupleValue(a, la)); c != 0 {
			return c
		}
		return compareTuples(a, b)
	}
}
