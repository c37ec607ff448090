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
	MaxBytes   int

	decider flow.Decider // Decider, checked
}

// addRuleFlags adds --threshold and --decider to fl, and with caps also
// --per-call and --per-session, each with the proxy's default.
func addRuleFlags(fl *pflag.FlagSet, r *ruleOptions, caps bool) {
	fl.Float64Var(&r.Threshold, "threshold", flow.DefaultThreshold, "the least score a lookup needs: the arbiter's P(hit), or P(tool) × P(binding matched) (hoist-mcp's --flow-threshold)")
	fl.StringVar(&r.Decider, "decider", "", "arbiter, reach or habit (hoist-mcp's --flow-decider; default: the arbiter for a flow that has one, else reach)")
	if caps {
		fl.IntVar(&r.PerCall, "per-call", flow.DefaultCaps.PerCall, "at most `N` lookups after one call (hoist-mcp's --flow-per-call)")
		fl.IntVar(&r.PerSession, "per-session", flow.DefaultCaps.PerSession, "at most `N` lookups in one session (hoist-mcp's --flow-per-session)")
		fl.IntVar(&r.MaxBytes, "max-bytes", flow.DefaultCaps.MaxBytes, "append at most `BYTES` to one result (hoist-mcp's --flow-max-bytes; 0: no cap)")
	}
}

// check checks the flags' values and parses the decider.
func (r *ruleOptions) check() error {
	switch {
	case r.Threshold < 0 || r.Threshold > 1:
		return &FlagError{fmt.Errorf("--threshold %v: want 0 to 1", r.Threshold)}
	case r.PerCall < 0 || r.PerSession < 0 || r.MaxBytes < 0:
		return &FlagError{fmt.Errorf("--per-call, --per-session and --max-bytes: want 0 or more")}
	}
	d, err := flow.ParseDecider(r.Decider)
	if err != nil {
		return &FlagError{fmt.Errorf("--decider: %w", err)}
	}
	r.decider = d
	return nil
}

// rule is the rule the flags name, for flow f: no decider named is f's
// default (its arbiter, when it has one).
func (r *ruleOptions) rule(f *flow.Flow) flow.Rule {
	d := r.decider
	if d == "" && f != nil {
		d = f.DefaultDecider()
	}
	return flow.Rule{Decider: d, Threshold: r.Threshold}
}

// caps are the caps the flags name, with the proxy's question cap.
func (r *ruleOptions) caps() flow.Caps {
	return flow.Caps{PerCall: r.PerCall, PerSession: r.PerSession, Questions: flow.DefaultCaps.Questions, MaxBytes: r.MaxBytes}
}
