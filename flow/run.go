package flow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
)

// RunSite is one site of a run (docs/flow-run.md): a decision (decide#i,
// its value the lookup taken or Stop, logp the log-propensity of that choice)
// or an answer (obs#j, "ok" or "error", logp its log-probability under the
// flow's statistics). Its JSON is [address, value, logp], with null for a
// logp of −Inf.
type RunSite struct {
	Address string
	Value   string
	LogP    float64
}

// MarshalJSON writes [address, value, logp].
func (s RunSite) MarshalJSON() ([]byte, error) {
	var lp any = s.LogP
	if math.IsInf(s.LogP, -1) {
		lp = nil
	} else if math.IsNaN(s.LogP) || math.IsInf(s.LogP, 1) {
		return nil, fmt.Errorf("site %s: logp %v", s.Address, s.LogP)
	}
	return json.Marshal([]any{s.Address, s.Value, lp})
}

// UnmarshalJSON reads [address, value, logp]; null is −Inf.
func (s *RunSite) UnmarshalJSON(b []byte) error {
	var parts []json.RawMessage
	if err := json.Unmarshal(b, &parts); err != nil || len(parts) != 3 {
		return errors.New("a site is [address, value, logp]")
	}
	if err := json.Unmarshal(parts[0], &s.Address); err != nil {
		return fmt.Errorf("site address: %w", err)
	}
	if err := json.Unmarshal(parts[1], &s.Value); err != nil {
		return fmt.Errorf("site %s value: %w", s.Address, err)
	}
	if bytes.Equal(bytes.TrimSpace(parts[2]), []byte("null")) {
		s.LogP = math.Inf(-1)
		return nil
	}
	if err := json.Unmarshal(parts[2], &s.LogP); err != nil {
		return fmt.Errorf("site %s logp: %w", s.Address, err)
	}
	return nil
}

// RunRecord is the flow log's run line: the program's data (call, failed,
// max_lookups), the fold and rule it was served with, each site as
// [address, value, logp] in the order visited, and the surprise of the
// answers in nats (−Σ logp over obs sites).
type RunRecord struct {
	Type       string    `json:"type"` // "run"
	Call       string    `json:"call"`
	Failed     bool      `json:"failed"`
	MaxLookups int       `json:"max_lookups"`
	Fold       int       `json:"fold"`
	Rule       Rule      `json:"rule"`
	Sites      []RunSite `json:"sites"`
	Surprise   float64   `json:"surprise"`
	Shadow     bool      `json:"shadow,omitempty"`
}

// LogPolicy returns Σ logp over the run's decision sites: the log-probability
// of its decisions under the rule that scored it.
func (r *RunRecord) LogPolicy() float64 {
	s := 0.0
	for _, site := range r.Sites {
		if strings.HasPrefix(site.Address, "decide#") {
			s += site.LogP
		}
	}
	return s
}

// Rescore scores a logged run again, given its trace (fugue's
// ScoreGivenTrace, docs/flow-run.md §1.6): the run line and the decision
// lines logged before it, in order. Each decision site's value is kept and
// its logp recomputed as the log-probability rule gives that value among
// the decision's logged offers (Rule.Propensities); each answer site's as
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
		case site.Address == fmt.Sprintf("decide#%d", di):
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
			_, p = rule.propensities(d.Offers, p)
			t := d.Taken
			if t < 0 {
				t = len(d.Offers)
			} else {
				lastTool = d.Offers[t].Tool
			}
			out.Sites[i].LogP = math.Log(p[t])
			di++
		case site.Address == fmt.Sprintf("obs#%d", oi):
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
