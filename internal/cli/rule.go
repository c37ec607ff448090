package cli

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/hoist-mcp/hoist/flow"
)

// ruleOptions say how a flow is served, as hoist-mcp's --flow-threshold,
// --flow-decider, --flow-per-call and --flow-per-session do, for the
// commands that serve one themselves: audit and replay take all four,
// flow-show the rule alone.
type ruleOptions struct {
	Threshold  float64
	Decider    string
	PerCall    int
	PerSession int

	decider flow.Decider // Decider, checked
}

// addRuleFlags adds --threshold and --decider to fl, and with caps also
// --per-call and --per-session, each with the proxy's default.
func addRuleFlags(fl *pflag.FlagSet, r *ruleOptions, caps bool) {
	fl.Float64Var(&r.Threshold, "threshold", flow.DefaultThreshold, "the least P(tool) × P(binding matched) a lookup needs (hoist-mcp's --flow-threshold)")
	fl.StringVar(&r.Decider, "decider", "reach", "where P(tool) comes from: reach or habit (hoist-mcp's --flow-decider)")
	if caps {
		fl.IntVar(&r.PerCall, "per-call", flow.DefaultCaps.PerCall, "at most `N` lookups after one call (hoist-mcp's --flow-per-call)")
		fl.IntVar(&r.PerSession, "per-session", flow.DefaultCaps.PerSession, "at most `N` lookups in one session (hoist-mcp's --flow-per-session)")
	}
}

// check checks the flags' values and parses the decider.
func (r *ruleOptions) check() error {
	switch {
	case r.Threshold < 0 || r.Threshold > 1:
		return &FlagError{fmt.Errorf("--threshold %v: want 0 to 1", r.Threshold)}
	case r.PerCall < 0 || r.PerSession < 0:
		return &FlagError{fmt.Errorf("--per-call and --per-session: want 0 or more")}
	}
	d, err := flow.ParseDecider(r.Decider)
	if err != nil {
		return &FlagError{fmt.Errorf("--decider: %w", err)}
	}
	r.decider = d
	return nil
}

// rule is the rule the flags name.
func (r *ruleOptions) rule() flow.Rule {
	return flow.Rule{Decider: r.decider, Threshold: r.Threshold}
}

// caps are the caps the flags name, with the proxy's question cap.
func (r *ruleOptions) caps() flow.Caps {
	return flow.Caps{PerCall: r.PerCall, PerSession: r.PerSession, Questions: flow.DefaultCaps.Questions}
}
