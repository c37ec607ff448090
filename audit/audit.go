// Package audit is hoist audit: the offline counterfactual of serving a flow
// in recorded episodes (issue 6, point 1). Each episode is walked call by
// call through the same decision code the proxy runs (flow.Session: caps,
// chained decisions, dedupe since the last write, folds by task); a lookup
// the flow takes is answered with the agent's own result when the agent made
// that same call before its next write (a hit), and is a detour otherwise,
// whose answer is unknown, so nothing chains from it. An LLM turn is saved
// when every call in it had already been looked up. Beside the savings it
// reports the read-only ceiling of the same episodes, and bootstrap
// intervals over episodes.
//
// A served session (the proxy's own lookups are in its log) is not walked
// again as if the flow had not been served: package earned says what those
// lookups earned, as a lower bound, an estimate and an upper bound of the
// hits and of the turns saved (docs/audit.md, "Served sessions"); the
// report sums the estimates and the bounds. Unserved and shadow sessions
// keep the counterfactual walk.
//
// audit reads episodes through episode.Source, never the store (DESIGN.md).
package audit

import (
	"context"
	"errors"
	"strings"

	"github.com/hoist-mcp/hoist/earned"
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
)

// Options say how the flow is served in the audit: the proxy's rule and caps.
type Options struct {
	Rule flow.Rule
	Caps flow.Caps
	// Filter selects the episodes.
	Filter episode.Filter
	// Resamples is the number of bootstrap resamples (DefaultResamples when
	// 0); Seed seeds them, so the same input gives the same report.
	Resamples int
	Seed      uint64
	// Missed, when set, is called by Walk with each of the agent's calls
	// that the flow had not looked up in a turn within the read-only
	// ceiling: what a study of a flow lists to see what it misses (the flow
	// benchmark's -v). It changes no count.
	Missed func(ep *episode.Episode, c *episode.Call)
	// Offer, when set, is called with each offer the decider scored (once
	// per run, at the first decision that offers it) and whether the agent
	// made that call itself before its next write: hoist audit
	// --calibration's reliability table.
	Offer func(o *flow.Offer, hit bool)
	// Calibration makes Run report the decider's reliability table.
	Calibration bool
}

// DefaultResamples is the number of bootstrap resamples of an interval.
const DefaultResamples = 1000

// Counts are what serving a flow did in one episode, or summed over many, at
// one site, one server, or in total.
type Counts struct {
	// Lookups the flow made at the site (a site is named by the tool whose
	// result offered them: the agent's call, or a lookup's in a chain); Hits the agent made itself before its next
	// write; Detours the others (Lookups = Hits + Detours).
	Lookups int `json:"lookups"`
	Hits    int `json:"hits"`
	Detours int `json:"detours"`
	// Bytes are what the hits' answers appended to the agent's results
	// (within --flow-max-bytes; a detour's answer is unknown).
	Bytes int `json:"bytes"`
	// Saved are the LLM turns saved: turns whose every call had already been
	// looked up. A turn of several sites' or servers' calls is shared among
	// them by its calls, so the rows sum to the total.
	Saved float64 `json:"saved_turns"`
	// Ceiling are the turns of only read calls whose every argument value
	// was found verbatim in an earlier result (per server, shared by
	// calls): the results ceiling. CeilingConst adds the values the flow's
	// constant bindings give, CeilingSaid those the customer said before
	// the call (--context). Each holds the one before.
	Ceiling      float64 `json:"ceiling_turns"`
	CeilingConst float64 `json:"ceiling_const_turns"`
	CeilingSaid  float64 `json:"ceiling_said_turns"`
	// HitBounds and SavedBounds are the hits and the turns saved with their
	// bounds. A served session's lookups were the proxy's, and its log shows
	// their hits only within bounds (package earned): Hits is then the
	// estimate rounded, and Saved the estimate. For a walked session each
	// bound is the count itself.
	HitBounds   earned.Bounds `json:"hits_bounds"`
	SavedBounds earned.Bounds `json:"saved_turns_bounds"`
}

func (c *Counts) addCeilings(level int, share float64) {
	if level <= inResults {
		c.Ceiling += share
	}
	if level <= inConsts {
		c.CeilingConst += share
	}
	if level <= inSaid {
		c.CeilingSaid += share
	}
}

func (c *Counts) add(o Counts) {
	c.Lookups += o.Lookups
	c.Hits += o.Hits
	c.Detours += o.Detours
	c.Bytes += o.Bytes
	c.Saved += o.Saved
	c.Ceiling += o.Ceiling
	c.CeilingConst += o.CeilingConst
	c.CeilingSaid += o.CeilingSaid
	c.HitBounds.Add(o.HitBounds)
	c.SavedBounds.Add(o.SavedBounds)
}

// exact sets the bounds of counts a walk found: each bound is the count.
func (c *Counts) exact() {
	h := float64(c.Hits)
	c.HitBounds = earned.Bounds{Lo: h, Est: h, Hi: h}
	c.SavedBounds = earned.Bounds{Lo: c.Saved, Est: c.Saved, Hi: c.Saved}
}

// Episode is one episode's audit: its LLM turns (those with a call of the
// agent's), and the counts per site, per server and in total.
type Episode struct {
	ID      string
	Turns   int
	Total   Counts
	Sites   map[string]*Counts
	Servers map[string]*Counts
	// Said is whether the episode logged what the customer said.
	Said bool
	// Task is the session's task (flow.TaskKey).
	Task string
	// Served says the flow was served in the session: its counts are what
	// the proxy's own lookups earned (package earned), and Turns counts
	// the turns the agent made beside the estimate of those it was spared.
	Served bool
	// Earned is what each of the proxy's lookups earned, when Served.
	Earned *earned.Earned
}

func (e *Episode) site(name string) *Counts {
	c := e.Sites[name]
	if c == nil {
		c = &Counts{}
		e.Sites[name] = c
	}
	return c
}

func (e *Episode) server(name string) *Counts {
	c := e.Servers[name]
	if c == nil {
		c = &Counts{}
		e.Servers[name] = c
	}
	return c
}

// Walk audits one episode: it serves f along it with flow.ReplayEpisode,
// the one replay of a flow over recorded episodes (hoist audit's, learn's
// fit of the arbiter and the flow benchmark's held-out share), and counts.
// A server that is none of the flow's looks nothing up, as a proxy says
// (manual, "Serving"); its turns still count.
//
// A served episode (earned.Served) is not walked: see WalkLogged.
func Walk(f *flow.Flow, ep *episode.Episode, opt Options) (*Episode, error) {
	return WalkLogged(f, ep, nil, opt)
}

// WalkLogged audits one episode as Walk does, given the decisions its flow
// log holds (nil for none). In a served episode the lookups counted are the
// proxy's own, each judged by earned.Of with the probability its decision
// gave; an unserved or shadow one is walked.
func WalkLogged(f *flow.Flow, ep *episode.Episode, decisions []flow.Decision, opt Options) (*Episode, error) {
	if earned.Served(ep) {
		return servedEpisode(f, ep, decisions), nil
	}
	out := &Episode{ID: ep.ID, Sites: map[string]*Counts{}, Servers: map[string]*Counts{}}
	calls := ep.Calls()
	var once flow.OfferOnce
	ropt := flow.ReplayOptions{Rule: opt.Rule, Caps: opt.Caps}
	if opt.Offer != nil {
		ropt.Decision = func(d *flow.Decision, hit []bool) {
			once.Each(d, hit, opt.Offer)
		}
	}
	rep := flow.ReplayEpisode(f, ep, ropt)
	for _, lk := range rep.Lookups {
		sc, sv := out.site(lk.From), out.server(lk.Server)
		for _, c := range []*Counts{sc, sv, &out.Total} {
			c.Lookups++
			c.Bytes += lk.Bytes
			if lk.Hit {
				c.Hits++
			} else {
				c.Detours++
			}
		}
	}
	ceil, said := ceilings(f, ep)
	out.Said = said
	for _, t := range ep.Turns {
		agent := t.AgentCalls(calls)
		if len(agent) == 0 {
			continue
		}
		out.Turns++
		share := 1 / float64(len(agent))
		all := true
		for _, ci := range agent {
			all = all && rep.Covered[ci]
		}
		lv := ceil[t.Index]
		if all {
			// The flow bound every call of the turn from earlier results,
			// through templates too (a value made of results, not found in
			// them verbatim): the turn is within the results ceiling.
			lv = inResults
		}
		out.Total.addCeilings(lv, 1)
		for _, ci := range agent {
			out.server(calls[ci].Server).addCeilings(lv, share)
		}
		if all {
			out.Total.Saved++
			for _, ci := range agent {
				out.site(rep.By[ci]).Saved += share
				out.server(calls[ci].Server).Saved += share
			}
		} else if lv <= inSaid && opt.Missed != nil {
			for _, ci := range agent {
				if !rep.Covered[ci] {
					opt.Missed(ep, calls[ci])
				}
			}
		}
	}
	out.exactAll()
	return out, nil
}

func (e *Episode) exactAll() {
	e.Total.exact()
	for _, c := range e.Sites {
		c.exact()
	}
	for _, c := range e.Servers {
		c.exact()
	}
}

// servedEpisode counts what the proxy's lookups earned in a served episode.
func servedEpisode(f *flow.Flow, ep *episode.Episode, decisions []flow.Decision) *Episode {
	out := &Episode{ID: ep.ID, Sites: map[string]*Counts{}, Servers: map[string]*Counts{}, Served: true}
	e := earned.Of(ep, decisions)
	out.Earned = e
	calls := ep.Calls()
	for _, lk := range e.Lookups {
		site := lk.From
		if site == "" {
			site = "(the proxy's)"
		}
		for _, c := range []*Counts{out.site(site), out.server(lk.Server), &out.Total} {
			c.Lookups++
			c.HitBounds.Add(lk.Hit)
			c.SavedBounds.Add(lk.Saved)
			if r := calls[lk.Call].Result; r != nil {
				c.Bytes += flow.AppendedSize(bare(lk.Tool, lk.Server), calls[lk.Call].Args, r.Text)
			}
		}
	}
	for _, c := range out.all() {
		c.Hits = earned.Round(c.HitBounds.Est)
		c.Detours = c.Lookups - c.Hits
		c.Saved = c.SavedBounds.Est
	}
	// The turns: those the agent made, and those it was spared.
	ceil, said := ceilings(f, ep)
	out.Said = said
	saved := earned.Round(e.Saved.Est)
	out.Turns = e.Turns + saved
	for _, t := range ep.Turns {
		agent := t.AgentCalls(calls)
		if len(agent) == 0 {
			continue
		}
		share := 1 / float64(len(agent))
		lv := ceil[t.Index]
		out.Total.addCeilings(lv, 1)
		for _, ci := range agent {
			out.server(calls[ci].Server).addCeilings(lv, share)
		}
	}
	// The turns spared were reads bound from results: within the results
	// ceiling.
	out.Total.addCeilings(inResults, float64(saved))
	for _, lk := range e.Lookups {
		out.server(lk.Server).addCeilings(inResults, lk.Saved.Est)
	}
	return out
}

// all returns the episode's counts: the total, then by server and site.
func (e *Episode) all() []*Counts {
	out := []*Counts{&e.Total}
	for _, c := range e.Servers {
		out = append(out, c)
	}
	for _, c := range e.Sites {
		out = append(out, c)
	}
	return out
}

// The ceilings, by level: a turn within one is within every later one.
const (
	inResults = 1 // reads whose every argument value is verbatim in an earlier result
	inConsts  = 2 // … or is a constant the flow binds that tool's arguments to
	inSaid    = 3 // … or is in what the customer said before the call
	beyond    = 4 // within none
)

// ceilings returns, by turn, the first ceiling all its calls are within
// (inResults, inConsts, inSaid), or beyond.
func ceilings(f *flow.Flow, ep *episode.Episode) (level map[int]int, said bool) {
	kinds := flow.ToolKinds(f, ep)
	consts := constants(f)
	level = map[int]int{}
	logged := false
	var earlier, heard strings.Builder
	for _, ev := range ep.Events {
		switch {
		case ev.Type == episode.EventMessage && ev.Message != nil && ev.Message.Role == "user":
			logged = true
			heard.WriteString(ev.Message.Text)
			heard.WriteByte('\n')
		case ev.Type == episode.EventCall && ev.Call != nil && ev.Call.By != episode.Proxy:
			c := ev.Call
			lv := beyond
			if kinds[c.Tool] == episode.Read {
				lv = ceilingLevel(c.Args, earlier.String(), heard.String(), consts[bare(c.Tool, c.Server)])
			}
			level[c.Turn] = max(level[c.Turn], lv)
		case ev.Type == episode.EventResult && ev.Result != nil:
			earlier.WriteString(ev.Result.Text)
			earlier.WriteByte('\n')
		}
	}
	return level, logged
}
func bare(tool, server string) string {
	if server == "" {
		return tool
	}
	return strings.TrimPrefix(tool, server+"::")
}

// ceilingLevel returns the first ceiling a read's arguments are within.
func ceilingLevel(args []byte, results, said string, consts map[string]bool) int {
	lv := inResults
	for _, v := range episode.ArgValues(args) {
		switch {
		case strings.Contains(results, v):
		case consts[v]:
			lv = max(lv, inConsts)
		case strings.Contains(said, v):
			lv = max(lv, inSaid)
		default:
			return beyond
		}
	}
	return lv
}

// constants returns, by tool, the argument values of the flow's constant
// bindings, as episode.ArgValues gives a call's.
func constants(f *flow.Flow) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, s := range f.Sites {
		for _, l := range s.Lookups {
			for _, b := range l.Bindings {
				for _, e := range b.Args {
					if !e.IsConst() {
						continue
					}
					// A constant's text is its JSON value.
					for _, a := range episode.ArgValues([]byte(e.String())) {
						if out[l.Tool] == nil {
							out[l.Tool] = map[string]bool{}
						}
						out[l.Tool][a] = true
					}
				}
			}
		}
	}
	return out
}

// Logged is an episode.Source that also yields each episode with the
// decisions its flow logs hold, in log order (nil for none): what judges a
// served session's lookups by their decisions' probabilities. Run uses it
// when its source has it.
type Logged interface {
	episode.Source
	Logged(ctx context.Context, f episode.Filter, fn func(*episode.Episode, []flow.Decision) error) error
}

// Run audits every episode of src the filter selects, and reports.
func Run(ctx context.Context, src episode.Source, f *flow.Flow, opt Options) (*Report, error) {
	if f == nil {
		return nil, errors.New("no flow")
	}
	if opt.Rule.Decider == "" {
		opt.Rule.Decider = f.DefaultDecider()
	}
	var eps []*Episode
	var ps []float64
	var hits []bool
	if opt.Calibration {
		next := opt.Offer
		opt.Offer = func(o *flow.Offer, hit bool) {
			ps = append(ps, o.Score(opt.Rule.Decider))
			hits = append(hits, hit)
			if next != nil {
				next(o, hit)
			}
		}
	}
	each := func(ep *episode.Episode, decisions []flow.Decision) error {
		a, err := WalkLogged(f, ep, decisions, opt)
		if err != nil {
			return err
		}
		a.Task = flow.TaskKey(ep)
		eps = append(eps, a)
		return nil
	}
	var err error
	if ls, ok := src.(Logged); ok {
		err = ls.Logged(ctx, opt.Filter, each)
	} else {
		err = src.Episodes(ctx, opt.Filter, func(ep *episode.Episode) error { return each(ep, nil) })
	}
	if err != nil {
		return nil, err
	}
	r := Summarize(eps, opt)
	tasks := map[string]bool{}
	for _, e := range eps {
		tasks[e.Task] = true
	}
	r.Tasks = len(tasks)
	if opt.Calibration {
		r.Calibration = Calibrate(opt.Rule.Decider, ps, hits)
	}
	return r, nil
}
