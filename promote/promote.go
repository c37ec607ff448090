// Package promote is hoist promote (issue 6, point 2): it scores the
// decisions of shadow runs (hoist-mcp --flow-shadow's flow logs) against what
// the agent then did, and marks each site of the flow promoted, or not with
// its reason, so that a promoted flow acts only at sites whose lookups paid
// (manual, --flow-shadow and "A promoted flow hands back after a call whose
// site was not promoted, with the reason the site is not promoted").
//
// A lookup the shadow run decided is a hit when the agent made that same
// call itself after the site and before its next write, and a detour
// otherwise. Its value, in saved turns, is its hit rate less the threshold
// (the ratio of a detour's cost to a saved turn: the manual's
// --flow-threshold). A site is promoted when it had at least MinRuns shadow
// runs and the lower bound of the 95% Wilson interval of its hit rate is
// above the threshold; else its reason says which test failed, or that a
// tool it looks up lists another input contract than the flow pinned.
//
// promote reads episodes and their flow logs through Source, never the store.
package promote

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/stats"
)

// Run is one run of a flow log: the run line, and its decisions in order.
type Run struct {
	// Server is the episode's server (log) whose proxy ran it.
	Server    string
	Record    flow.RunRecord
	Decisions []flow.Decision
}

// Source yields episodes with the runs their flow logs hold. Implementations
// are safe for concurrent use.
type Source interface {
	// Runs calls fn with each episode the filter selects and its runs, in
	// log order per server, until fn returns an error or they run out.
	Runs(ctx context.Context, f episode.Filter, fn func(ep *episode.Episode, runs []Run) error) error
}

// Options are promote's settings.
type Options struct {
	// Threshold is the ratio of a detour's cost to a saved turn, which a
	// site's hit rate must beat (flow.DefaultThreshold when 0).
	Threshold float64
	// MinRuns is the least number of shadow runs a site needs (DefaultMinRuns
	// when 0).
	MinRuns int
	// Level is the confidence of the lower bound (0.95 when 0).
	Level  float64
	Filter episode.Filter
}

// DefaultMinRuns is --min-runs' default.
const DefaultMinRuns = 10

// Site is what the shadow runs said of one site of the flow.
type Site struct {
	Tool   string `json:"tool"`
	Failed bool   `json:"failed"`
	// Runs are the shadow runs at the site; Lookups the lookups they decided,
	// of which Hits the agent made itself before its next write.
	Runs    int `json:"runs"`
	Lookups int `json:"lookups"`
	Hits    int `json:"hits"`
	// HitRate is Hits/Lookups with its Wilson interval; Value is the lower
	// bound less the threshold: the site is promoted when it is above zero.
	HitRate float64 `json:"hit_rate"`
	Lo      float64 `json:"hit_rate_lo"`
	Hi      float64 `json:"hit_rate_hi"`
	Value   float64 `json:"value_lcb"`
	// Promoted, and else Reason, are the marks written to the flow.
	Promoted bool   `json:"promoted"`
	Reason   string `json:"reason,omitempty"`
}

// Report is what promote did.
type Report struct {
	Episodes int `json:"episodes"`
	// ShadowRuns counts the shadow runs scored; Unmatched the runs that could
	// not be placed after an agent's call of the episode (left out).
	ShadowRuns int     `json:"shadow_runs"`
	Unmatched  int     `json:"unmatched_runs"`
	Threshold  float64 `json:"threshold"`
	MinRuns    int     `json:"min_runs"`
	Sites      []Site  `json:"sites"`
}

type key struct {
	tool   string
	failed bool
}

type tally struct{ runs, lookups, hits int }

// Promote scores the shadow runs src holds and returns a copy of f with
// every site marked, and the report.
func Promote(ctx context.Context, src Source, f *flow.Flow, opt Options) (*flow.Flow, *Report, error) {
	if opt.Threshold == 0 {
		opt.Threshold = flow.DefaultThreshold
	}
	if opt.MinRuns == 0 {
		opt.MinRuns = DefaultMinRuns
	}
	if opt.Level == 0 {
		opt.Level = 0.95
	}
	rep := &Report{Threshold: opt.Threshold, MinRuns: opt.MinRuns}
	tallies := map[key]*tally{}
	changed := map[string]string{} // tool → why it may not be looked up any more
	err := src.Runs(ctx, opt.Filter, func(ep *episode.Episode, runs []Run) error {
		rep.Episodes++
		for _, t := range ep.Tools {
			pinned, ok := f.Tools[t.Name]
			switch {
			case !ok || pinned.Kind != episode.Read:
			case t.Kind == episode.Write:
				changed[t.Name] = fmt.Sprintf("%s is now marked readOnlyHint: false", t.Name)
			case pinned.Input != nil && len(t.InputSchema) > 0 && !pinned.Input.Equal(flow.ContractOf(t.InputSchema)):
				changed[t.Name] = fmt.Sprintf("%s's server lists another input contract than the pinned one", t.Name)
			}
		}
		n, unmatched := score(f, ep, runs, func(k key, lookups, hits int) {
			t := tallies[k]
			if t == nil {
				t = &tally{}
				tallies[k] = t
			}
			t.runs++
			t.lookups += lookups
			t.hits += hits
		})
		rep.ShadowRuns += n
		rep.Unmatched += unmatched
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	out := *f
	out.Sites = slices.Clone(f.Sites)
	for i := range out.Sites {
		s := &out.Sites[i]
		t := tallies[key{s.Tool, s.Failed}]
		if t == nil {
			t = &tally{}
		}
		site := judge(s, t, changed, opt)
		promoted := site.Promoted
		s.Promoted, s.Reason = &promoted, site.Reason
		rep.Sites = append(rep.Sites, site)
	}
	if rep.Sites == nil {
		rep.Sites = []Site{}
	}
	return &out, rep, nil
}

// judge decides one site.
func judge(s *flow.Site, t *tally, changed map[string]string, opt Options) Site {
	out := Site{Tool: s.Tool, Failed: s.Failed, Runs: t.runs, Lookups: t.lookups, Hits: t.hits}
	var why []string
	for _, l := range s.Lookups {
		if c, ok := changed[l.Tool]; ok {
			why = append(why, c)
		}
	}
	if t.lookups > 0 {
		out.HitRate = float64(t.hits) / float64(t.lookups)
		out.Lo, out.Hi = stats.Wilson(t.hits, t.lookups, opt.Level)
		out.Value = out.Lo - opt.Threshold
	}
	switch {
	case len(why) > 0:
		out.Reason = "contract changed: " + strings.Join(why, "; ")
	case t.runs < opt.MinRuns:
		out.Reason = fmt.Sprintf("too few runs: %d shadow runs, --min-runs %d", t.runs, opt.MinRuns)
	case t.lookups == 0:
		out.Reason = fmt.Sprintf("would not pay: it looked nothing up in %d shadow runs", t.runs)
	case out.Value <= 0:
		out.Reason = fmt.Sprintf("would not pay: hit rate %.2f (%.0f%% interval %.2f–%.2f over %d lookups) is not above the threshold %.2f",
			out.HitRate, 100*opt.Level, out.Lo, out.Hi, t.lookups, opt.Threshold)
	default:
		out.Promoted = true
	}
	return out
}

// score places each shadow run after the agent's call it followed and
// scores its lookups: hit when the agent made the same call itself after the
// call's result and before its next write. Runs are placed in order, per
// server: the proxy runs the flow once after each of the agent's calls that
// returns, so the k-th run of a server follows one of its calls, in order,
// whose tool is the run's call. It returns the shadow runs scored and those
// it could not place.
func score(f *flow.Flow, ep *episode.Episode, runs []Run, add func(k key, lookups, hits int)) (scored, unmatched int) {
	kinds := map[string]episode.Kind{}
	for _, t := range ep.Tools {
		kinds[t.Name] = t.Kind
	}
	for name, t := range f.Tools {
		if _, ok := kinds[name]; !ok {
			kinds[name] = t.Kind
		}
	}
	calls := ep.Calls()
	labels := make([]string, len(calls))
	for i, c := range calls {
		if c.By != episode.Proxy {
			labels[i] = flow.CallLabel(c.Tool, c.Args)
		}
	}
	byServer := map[string][]Run{}
	var servers []string
	for _, r := range runs {
		if _, ok := byServer[r.Server]; !ok {
			servers = append(servers, r.Server)
		}
		byServer[r.Server] = append(byServer[r.Server], r)
	}
	for _, server := range servers {
		rs := byServer[server]
		j := 0
		for pos, ev := range ep.Events {
			if j >= len(rs) {
				break
			}
			if ev.Type != episode.EventResult || ev.Result == nil {
				continue
			}
			ci := ev.Result.CallIndex
			if ci < 0 || ci >= len(calls) || calls[ci].By == episode.Proxy || len(ep.Servers) > 1 && calls[ci].Server != server {
				continue
			}
			r := rs[j]
			if !sameTool(r.Record.Call, calls[ci].Tool) {
				continue
			}
			j++
			if !r.Record.Shadow {
				continue
			}
			scored++
			lookups, hits := 0, 0
			for _, d := range r.Decisions {
				if d.Taken < 0 || d.Taken >= len(d.Offers) {
					continue
				}
				lookups++
				if later(ep, pos, labels, kinds, d.Offers[d.Taken].Label()) {
					hits++
				}
			}
			add(key{r.Record.Call, r.Record.Failed}, lookups, hits)
		}
		unmatched += len(rs) - j
	}
	return scored, unmatched
}

// sameTool reports whether a run's call (the flow's name) is the episode's
// call of tool (qualified or not).
func sameTool(run, tool string) bool {
	return run == tool || strings.HasSuffix(tool, "::"+run) || strings.HasSuffix(run, "::"+tool)
}

// later reports whether the agent made the call of label lb after event pos
// and before its next write.
func later(ep *episode.Episode, pos int, labels []string, kinds map[string]episode.Kind, lb string) bool {
	for _, ev := range ep.Events[pos+1:] {
		if ev.Type != episode.EventCall || ev.Call == nil || ev.Call.By == episode.Proxy {
			continue
		}
		if labels[ev.Call.Index] == lb {
			return true
		}
		if kinds[ev.Call.Tool] == episode.Write {
			return false
		}
	}
	return false
}
