package evaluate

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hoist-mcp/hoist/flow"
)

// Target is a decision rule whose value is estimated: a flow.Rule (decider,
// threshold and its own exploration rate, usually 0: greedy); Never, which
// always hands back; or Served, the rule each decision was logged under
// without its exploration.
type Target struct {
	// Name is how reports name it: "never", "reach≥0.3", "habit≥0.5 ε=0.1".
	Name  string
	Rule  flow.Rule
	Never bool
	// Logged, with Rule unset, is the logged rule with ε = 0.
	Logged bool
}

// Never is the rule that never looks anything up: its value is 0, which
// every estimate of it should cover.
var Never = Target{Name: "never", Never: true}

// Served is what promote asks of the shadow runs: the rule that logged
// each decision, as it serves once promoted, without exploring.
var Served = Target{Name: "served", Logged: true}

// probs returns the target's probability of each action at a decision
// logged under rule logged: p[i] for offers[i], p[len(offers)] for stop.
func (t Target) probs(offers []flow.Offer, logged flow.Rule) []float64 {
	switch {
	case t.Never:
		p := make([]float64, len(offers)+1)
		p[len(offers)] = 1
		return p
	case t.Logged:
		logged.Epsilon = 0
		_, p := flow.Propensities(logged, offers)
		return p
	}
	_, p := flow.Propensities(t.Rule, offers)
	return p
}

// NewTarget returns the target of a rule, named after it.
func NewTarget(r flow.Rule) Target {
	if r.Decider == "" {
		r.Decider = flow.Reach
	}
	name := fmt.Sprintf("%s≥%s", r.Decider, strconv.FormatFloat(r.Threshold, 'g', -1, 64))
	if r.Epsilon > 0 {
		name += " ε=" + strconv.FormatFloat(r.Epsilon, 'g', -1, 64)
	}
	return Target{Name: name, Rule: r}
}

// ParseTarget reads a --rule value: "never"; or DECIDER:THRESHOLD[:EPSILON]
// with DECIDER reach or habit, THRESHOLD in [0, 1] and EPSILON (the target's
// own exploration, default 0, greedy) in [0, 1]: "reach:0.3", "habit:0.5",
// "reach:0.2:0.1". "greedy" is "reach:0" (the best bound offer, whatever
// its score).
func ParseTarget(s string) (Target, error) {
	switch s {
	case "never":
		return Never, nil
	case "greedy":
		return NewTarget(flow.Rule{Decider: flow.Reach}), nil
	}
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return Target{}, fmt.Errorf("rule %q: want never, greedy or DECIDER:THRESHOLD[:EPSILON]", s)
	}
	d, err := flow.ParseDecider(parts[0])
	if err != nil || parts[0] == "" || d == flow.ArbiterDecider {
		return Target{}, fmt.Errorf("rule %q: decider: want reach or habit", s)
	}
	r := flow.Rule{Decider: d}
	if r.Threshold, err = strconv.ParseFloat(parts[1], 64); err != nil || r.Threshold < 0 || r.Threshold > 1 || math.IsNaN(r.Threshold) {
		return Target{}, fmt.Errorf("rule %q: threshold: want a number from 0 to 1", s)
	}
	if len(parts) == 3 {
		if r.Epsilon, err = strconv.ParseFloat(parts[2], 64); err != nil || r.Epsilon < 0 || r.Epsilon > 1 || math.IsNaN(r.Epsilon) {
			return Target{}, fmt.Errorf("rule %q: epsilon: want a number from 0 to 1", s)
		}
	}
	return NewTarget(r), nil
}

// DefaultTargets is the grid evaluated when no rule is named: never; reach
// at thresholds 0 (greedy), 0.1, 0.2, 0.3, 0.5 and 0.7; habit at 0.1, 0.3
// and 0.5. Evaluate, given no targets, adds the rules the decisions were
// logged under, without their exploration, when they are not among them.
func DefaultTargets() []Target {
	out := []Target{Never}
	for _, th := range []float64{0, 0.1, 0.2, 0.3, 0.5, 0.7} {
		out = append(out, NewTarget(flow.Rule{Decider: flow.Reach, Threshold: th}))
	}
	for _, th := range []float64{0.1, 0.3, 0.5} {
		out = append(out, NewTarget(flow.Rule{Decider: flow.Habit, Threshold: th}))
	}
	return out
}
