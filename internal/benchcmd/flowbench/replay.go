package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/hoist-mcp/hoist/audit"
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/learn"
)

// replay sums what serving a flow would have done over episodes.
type replay struct {
	episodes  int
	toolTurns int    // LLM turns that call tools
	ceiling   [3]int // of them, turns of only reads whose arguments were all in earlier results; or constants; or said
	saved     int    // of them, turns whose every call the flow had already looked up
	lookups   int    // lookups the flow made
	detours   int    // of them, lookups the agent never made
	bytes     int    // what the hits appended
	ps        []float64
	hits      []bool // the decider's offers and whether each hit, for its ECE
	// agents are the lookups and detours by agent model.
	agents map[string][2]int
}

func (r *replay) add(o replay) {
	r.episodes += o.episodes
	r.toolTurns += o.toolTurns
	for i := range r.ceiling {
		r.ceiling[i] += o.ceiling[i]
	}
	r.saved += o.saved
	r.lookups += o.lookups
	r.detours += o.detours
	r.bytes += o.bytes
	r.ps = append(r.ps, o.ps...)
	r.hits = append(r.hits, o.hits...)
	for m, v := range o.agents {
		if r.agents == nil {
			r.agents = map[string][2]int{}
		}
		a := r.agents[m]
		r.agents[m] = [2]int{a[0] + v[0], a[1] + v[1]}
	}
}

// printAgents prints the precision by agent model, lowest first.
func (r replay) printAgents(w io.Writer) {
	models := make([]string, 0, len(r.agents))
	for m := range r.agents {
		models = append(models, m)
	}
	prec := func(m string) float64 {
		a := r.agents[m]
		if a[0] == 0 {
			return 1
		}
		return float64(a[0]-a[1]) / float64(a[0])
	}
	slices.SortFunc(models, func(a, b string) int { return cmp.Or(cmp.Compare(prec(a), prec(b)), strings.Compare(a, b)) })
	for _, m := range models {
		a := r.agents[m]
		fmt.Fprintf(w, "    %s\t\t\t\t\t\t\t\t%s of %d\t\t\t\n", m, pct(a[0]-a[1], a[0]), a[0])
	}
}

// printCalibration prints the reliability table of the decider's scores,
// with the ECE overall and over the offers scored 0.2 to 0.5, around the
// threshold.
func (r replay) printCalibration(out io.Writer) {
	bins, ece := flow.Reliability(r.ps, r.hits)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "  P(hit)\toffers\tmean P\thit rate\t\n")
	for _, b := range bins {
		if b.Offers == 0 {
			continue
		}
		fmt.Fprintf(w, "  %.1f–%.1f\t%d\t%.3f\t%.3f\t\n", b.Lo, b.Hi, b.Offers, b.MeanP, b.Rate)
	}
	w.Flush()
	fmt.Fprintf(out, "  ECE %.3f; in the band 0.2–0.5 %.3f\n", ece, flow.BandECE(r.ps, r.hits, 0.2, 0.5))
}

func pct(a, b int) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(a)/float64(b))
}

func per(a, b int) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(a)/float64(b))
}

const replayHeader = "episodes\ttool turns\tceiling: results\t+ constants\t+ conversation\tsaved\tshare of results ceiling\tprecision\tECE\tlookups / saved turn\tbytes / saved turn"

func (r replay) print(w io.Writer, name string) {
	_, ece := flow.Reliability(r.ps, r.hits)
	fmt.Fprintf(w, "  %s\t%d\t%d\t%s\t%s\t%s\t%d (%s)\t%s\t%s\t%.3f\t%s\t%s\n", name, r.episodes, r.toolTurns,
		pct(r.ceiling[0], r.toolTurns), pct(r.ceiling[1], r.toolTurns), pct(r.ceiling[2], r.toolTurns),
		r.saved, pct(r.saved, r.toolTurns), pct(r.saved, r.ceiling[0]), pct(r.lookups-r.detours, r.lookups), ece,
		per(r.lookups, r.saved), per(r.bytes, r.saved))
}

// learnHeldOut learns one flow from eps with folds by task, with the levers
// -with and -ablate name, and, for the arbiter decider, fits its arbiter,
// as hoist learn does; nil when the fit fails.
func learnHeldOut(eps []*episode.Episode, domain string, folds int, d flow.Decider) *flow.Flow {
	l := learn.New(learn.Options{Domain: domain, Folds: folds, Positions: withLevers["position"], Descriptions: withLevers["describe"], WordDates: withLevers["date"], SaidConditions: withLevers["words"], Rest: withLevers["rest"], Cues: withLevers["cues"], AgentWords: withLevers["agentwords"], NoListConditions: ablated["lists"]})
	for _, ep := range eps {
		l.Add(ep)
	}
	f := l.Flow()
	if d == flow.ArbiterDecider {
		if err := learn.FitArbiterWith(context.Background(), sliceSource{eps, 1}, episode.Filter{}, f, learn.ArbiterOptions{ByAgent: byAgent}); err != nil || f.Arbiter == nil {
			return nil
		}
	}
	ablate(f)
	return f
}

// heldOut learns one flow from eps with folds by task (and, for the
// arbiter decider, fits its arbiter, as hoist learn does), and replays
// each episode served with its own task's fold left out. Without the
// conversation, the episodes' messages are left out of both.
func heldOut(eps []*episode.Episode, domain string, folds int, rule flow.Rule, conversation bool) replay {
	if !conversation {
		eps = withoutMessages(eps)
	}
	f := learnHeldOut(eps, domain, folds, rule.Decider)
	if f == nil {
		return replay{}
	}
	if writeFlows != "" {
		b, err := f.Marshal()
		if err == nil {
			err = os.WriteFile(filepath.Join(writeFlows, domain+"-"+string(rule.Decider)+".flow.json"), b, 0o644)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "flowbench: -write-flows: %v\n", err)
			os.Exit(1)
		}
	}
	var r replay
	for _, ep := range eps {
		r.add(replayEpisode(f, ep, rule))
		if sources != nil {
			countSources(f, ep, rule)
		}
	}
	return r
}

// ablate takes out of f what -ablate names.
func ablate(f *flow.Flow) {
	if ablated["heldout"] && f.Arbiter != nil {
		f.Arbiter.HeldOut = nil
	}
	for si := range f.Sites {
		for li := range f.Sites[si].Lookups {
			l := &f.Sites[si].Lookups[li]
			if ablated["narrow"] {
				for bi := range l.Bindings {
					l.Bindings[bi].Narrow = nil
				}
			}
		}
	}
}

// withoutMessages returns copies of the episodes without their
// conversation.
func withoutMessages(eps []*episode.Episode) []*episode.Episode {
	out := make([]*episode.Episode, len(eps))
	for i, ep := range eps {
		c := *ep
		c.Events = nil
		for _, ev := range ep.Events {
			if ev.Type != episode.EventMessage {
				c.Events = append(c.Events, ev)
			}
		}
		out[i] = &c
	}
	return out
}

// replayEpisode serves f along one recorded episode, offline, through
// audit.Walk (the replay hoist audit ships): after each of the agent's
// results the flow runs; a lookup the agent made later, before its next
// write, is answered with the agent's own result (so decisions chain), one
// it never made is a detour. A turn is saved when every call in it was
// looked up since the last write.
func replayEpisode(f *flow.Flow, ep *episode.Episode, rule flow.Rule) replay {
	var r replay
	opt := audit.Options{Rule: rule, Caps: replayCaps, Offer: func(o *flow.Offer, hit bool) {
		r.ps = append(r.ps, o.Score(rule.Decider))
		r.hits = append(r.hits, hit)
	}}
	if misses != nil {
		opt.Missed = func(ep *episode.Episode, c *episode.Call) {
			misses[ep.Domain+" "+c.Tool+" "+string(c.Args)]++
		}
	}
	a, err := audit.Walk(f, ep, opt)
	if err != nil {
		return replay{episodes: 1}
	}
	// The total's saved and ceiling turns are whole turns (a row's may be
	// shares of one).
	r.episodes, r.toolTurns, r.saved = 1, a.Turns, int(a.Total.Saved)
	r.ceiling = [3]int{int(a.Total.Ceiling), int(a.Total.CeilingConst), int(a.Total.CeilingSaid)}
	r.lookups, r.detours, r.bytes = a.Total.Lookups, a.Total.Detours, a.Total.Bytes
	model := ep.AgentModel
	if model == "" {
		model = "(unknown)"
	}
	r.agents = map[string][2]int{model: {r.lookups, r.detours}}
	return r
}

// misses counts, with -v, the calls of ceiling turns the flow did not look up.
var misses map[string]int
