package flow

import (
	"fmt"
	"math"

	"github.com/hoist-mcp/hoist/mcplog"
)

// RunSite is one site of a run (docs/flow.md): a decision (decide#i,
// its value the lookup taken or Stop, logp the log-propensity of that choice)
// or an answer (obs#j, "ok" or "error", logp its log-probability under the
// flow's statistics). Its JSON, [address, value, logp] with null for a logp
// of −Inf, is the flow log's (mcplog.FlowSite).
type RunSite = mcplog.FlowSite

// RunRecord is the flow log's run line (mcplog.FlowRun): the program's
// data (call, failed, max_lookups), the fold and rule it was served with,
// each site as [address, value, logp] in the order visited, and the
// surprise of the answers in nats (−Σ logp over obs sites). Its LogPolicy
// is Σ logp over the decision sites.
type RunRecord = mcplog.FlowRun

// Rescore scores a logged run again, given its trace (fugue's
// ScoreGivenTrace, docs/flow-run.md §1.6): the run line and the decision
// lines logged before it, in order. Each decision site's value is kept and
// its logp recomputed as the log-probability rule gives that value among
// the decision's logged offers (Propensities); each answer site's as
// the log-probability f gives the logged outcome of the lookup it answers,
// in the run's fold. Nothing is looked up again.
//
// With the rule and flow that served the run, every logp comes back equal,
// bit for bit; with another rule, the difference of LogPolicy is the log
// importance weight of the run (docs/ope.md). A trace whose sites do not
// match its decisions is an error.
func Rescore(f *Flow, rule Rule, decisions []Decision, run RunRecord) (RunRecord, error) {
	out := run
	out.Rule = rule
	out.Sites = make([]RunSite, len(run.Sites))
	var lastTool string
	di, oi := 0, 0
	var p []float64
	for i, site := range run.Sites {
		out.Sites[i] = site
		switch {
		case site.Address == address(mcplog.SiteDecide, di):
			if di >= len(decisions) {
				return RunRecord{}, fmt.Errorf("site %s: no decision logged for it", site.Address)
			}
			d := &decisions[di]
			if d.Site != site.Address {
				return RunRecord{}, fmt.Errorf("site %s: decision %d is %s", site.Address, di, d.Site)
			}
			if v := d.Value(); v != site.Value {
				return RunRecord{}, fmt.Errorf("site %s: value %q, but its decision took %q", site.Address, site.Value, v)
			}
			if cap(p) < len(d.Offers)+1 {
				p = make([]float64, len(d.Offers)+1)
			}
			p = p[:len(d.Offers)+1]
			clear(p)
			_, p = propensities(rule, d.Offers, p)
			t := d.Taken
			if t < 0 {
				t = len(d.Offers)
			} else {
				lastTool = d.Offers[t].Tool
			}
			out.Sites[i].LogP = math.Log(p[t])
			di++
		case site.Address == address(mcplog.SiteObs, oi):
			if lastTool == "" {
				return RunRecord{}, fmt.Errorf("site %s: no lookup taken before it", site.Address)
			}
			if site.Value != "ok" && site.Value != "error" {
				return RunRecord{}, fmt.Errorf("site %s: value %q, want ok or error", site.Address, site.Value)
			}
			out.Sites[i].LogP = f.answerLogP(lastTool, site.Value == "error", run.Fold)
			oi++
		default:
			return RunRecord{}, fmt.Errorf("site %s out of order: want decide#%d or obs#%d", site.Address, di, oi)
		}
	}
	out.Surprise = surprise(out.Sites)
	return out, nil
}
