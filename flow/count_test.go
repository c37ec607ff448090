package flow_test

import (
	"testing"

	"github.com/hoist-mcp/hoist/flow"
)

// A rule that names no decider counts as the proxy serves the flow: with
// its arbiter when it has one (issue 24, item 4: learn, flow-show and the
// console once counted a flow with an arbiter by reach, by the arbiter and
// by an empty decider).
func TestCountSitesAsServed(t *testing.T) {
	f := &flow.Flow{Arbiter: &flow.Arbiter{}}
	if r := flow.ServedRule(f, flow.Rule{}); r.Decider != flow.ArbiterDecider || r.Threshold != flow.DefaultThreshold {
		t.Errorf("served rule %+v, want the arbiter at the default threshold", r)
	}
	if r := flow.ServedRule(&flow.Flow{}, flow.Rule{Threshold: 0.5}); r.Decider != flow.Reach || r.Threshold != 0.5 {
		t.Errorf("served rule %+v, want reach at 0.5", r)
	}
	if c := flow.CountSites(&flow.Flow{}, flow.Rule{}); c != (flow.SiteCounts{}) {
		t.Errorf("an empty flow counts %+v", c)
	}
}
