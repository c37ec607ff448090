package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/hoist-mcp/hoist/audit"
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/learn"
)

// The bound (-bound) says how far any decision rule over a flow's own
// bindings could go, on the held-out replay the rows above it come from
// (docs/flow.md, "How far the bindings can go").
//
// The flow is served with every gate off: an arbiter that scores every
// offer 1 (so the threshold takes all, while the binding each lookup
// offers is still the one it chooses at the replay's threshold), no
// held-out gate, no cap on lookups or bytes. Every lookup the flow would
// make where its binding binds is then made: these are the candidates.
// Each is a hit or a detour by the replay's own rule, and covers the
// agent's calls it was the lookup of; a turn is saved when every call of
// it is covered (the replay's turn rule).
//
// The candidates are grouped, and groups chosen greedily by descending
// hit rate while the precision of those chosen stays at a floor (choose):
// by site, lookup and binding (what a rule fixed in the flow could
// choose), the same by agent model (what a perfect gate by agent could),
// and the same by episode (what an oracle that knows each session could:
// the bound for any per-session signal). The turns the chosen save are
// the bound at that precision.
var boundFlag = flag.Bool("bound", false, "after the replay, print the bound: the turns any choice of the flow's own lookups could save at a precision of 80%, 85% and the replay's own, by site, lookup and binding, by agent model too, and by episode")

// boundPrecisions are the precision floors the bound is printed at, beside
// the replay's own.
var boundPrecisions = []float64{0.80, 0.85}

// candidate is one lookup the flow would make with every gate off.
type candidate struct {
	site, lookup, binding string // the lookup, as a rule fixed in the flow names it
	model, episode        string
	hit                   bool
	n                     int // its index among the domain's candidates
}

// groupings are the keys candidates are chosen by: what a rule could tell
// apart. (d) knows each lookup's outcome: it takes every hit and no
// detour, so it saves every turn the candidates can.
var groupings = []struct {
	name string
	key  func(c *candidate) string
}{
	{"(a) site, lookup, binding", func(c *candidate) string { return c.site + "\t" + c.lookup + "\t" + c.binding }},
	{"(b) … and agent model", func(c *candidate) string { return c.site + "\t" + c.lookup + "\t" + c.binding + "\t" + c.model }},
	{"(c) … and episode", func(c *candidate) string { return c.site + "\t" + c.lookup + "\t" + c.binding + "\t" + c.episode }},
	{"(d) each lookup alone", func(c *candidate) string { return fmt.Sprint(c.n) }},
}

// candidates are a domain's candidate lookups and the turns they could
// save.
type candidates struct {
	all []candidate
	// turns are the tool-calling turns whose every call some candidate
	// covers: for each, the candidates that cover its calls, all needed.
	turns [][]int
	// toolTurns are the tool-calling turns; ceiling those within the
	// conversation ceiling, as the replay counts it with every candidate
	// made (every call's arguments in an earlier result, a constant or
	// what the customer said, or the turn saved), and afterCall those of
	// them after the first result of the session: before it no lookup can
	// be appended.
	toolTurns, ceiling, afterCall int
}

// group is the candidates of one key: how many, and how many hit.
type group struct {
	key          string
	offers, hits int
}

// choose returns which groups a precision floor p lets in: in descending
// order of hit rate (more offers first among equals, then by key), each
// group is taken when the precision of all taken stays at least p. A group
// without a hit is never taken: it saves nothing.
func choose(groups []group, p float64) []bool {
	order := make([]int, len(groups))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int {
		a, b := groups[i], groups[j]
		// a.hits/a.offers > b.hits/b.offers, without division.
		return cmp.Or(cmp.Compare(b.hits*a.offers, a.hits*b.offers), cmp.Compare(b.offers, a.offers), strings.Compare(a.key, b.key))
	})
	taken := make([]bool, len(groups))
	offers, hits := 0, 0
	for _, i := range order {
		g := groups[i]
		if g.hits == 0 || float64(hits+g.hits) < p*float64(offers+g.offers)-1e-9 {
			continue
		}
		taken[i] = true
		offers += g.offers
		hits += g.hits
	}
	return taken
}

// savedBy returns the turns a choice of candidates saves: those whose
// every covering candidate is chosen.
func savedBy(turns [][]int, chosen []bool) int {
	n := 0
	for _, t := range turns {
		all := true
		for _, c := range t {
			all = all && chosen[c]
		}
		if all {
			n++
		}
	}
	return n
}

// chosenBy returns, for each candidate, whether its group is among those
// choose takes at precision p under the grouping by key.
func (cs *candidates) chosenBy(key func(*candidate) string, p float64) []bool {
	index := map[string]int{}
	var groups []group
	of := make([]int, len(cs.all))
	for i := range cs.all {
		k := key(&cs.all[i])
		g, ok := index[k]
		if !ok {
			g = len(groups)
			index[k] = g
			groups = append(groups, group{key: k})
		}
		of[i] = g
		groups[g].offers++
		if cs.all[i].hit {
			groups[g].hits++
		}
	}
	taken := choose(groups, p)
	chosen := make([]bool, len(cs.all))
	for i, g := range of {
		chosen[i] = taken[g]
	}
	return chosen
}

// boundFlow is the flow f with every gate off: an arbiter that scores
// every offer 1 and holds no held-out counts.
func boundFlow(f *flow.Flow) *flow.Flow {
	g := *f
	g.Arbiter = &flow.Arbiter{Features: []string{flow.FeatureBias}, Weights: []float64{100}} // σ(100) is 1 in float64
	return &g
}

// boundCaps lift the caps on lookups per call and per session, and bytes.
var boundCaps = flow.Caps{PerCall: 1 << 20, PerSession: 1 << 30}

// collect adds to cs the candidates of one episode, served g (boundFlow)
// under rule, and its turns.
func (cs *candidates) collect(g *flow.Flow, ep *episode.Episode, rule flow.Rule) {
	model := cmp.Or(ep.AgentModel, "(unknown)")
	first := len(cs.all)
	var labels []string // of each lookup made, in order
	rep := flow.ReplayEpisode(g, ep, flow.ReplayOptions{Rule: rule, Caps: boundCaps, Decision: func(d *flow.Decision, hit []bool) {
		if d.Taken < 0 {
			return
		}
		o := &d.Offers[d.Taken]
		cs.all = append(cs.all, candidate{site: o.From, lookup: o.Tool, binding: flow.OfferBinding(o.Binding), model: model, episode: ep.ID, hit: hit[d.Taken], n: len(cs.all)})
		labels = append(labels, o.Label())
	}})
	if len(rep.Lookups) != len(labels) {
		panic("bound: the replay's lookups are not its decisions'")
	}
	// Which lookup covered each covered call: a lookup kept covers the
	// agent's calls of it until the agent's next write, and the session
	// makes no lookup of a call asked since the last write, so the k-th
	// lookup kept of a call covers its k-th stretch of covered calls
	// between writes.
	kept := map[string][]int{} // label → the lookups kept of it, in order
	for i, lk := range rep.Lookups {
		if lk.Hit && lk.Kept {
			kept[labels[i]] = append(kept[labels[i]], first+i)
		}
	}
	calls := ep.Calls()
	kinds := flow.ToolKinds(g, ep)
	by := make([]int, len(calls)) // the candidate that covered each call, or -1
	at := make([]int, len(calls)) // each call's event
	stretch := map[string]int{}   // label → the writes before its stretch of covered calls
	covering := map[string]int{}  // label → the lookup covering that stretch
	writes, firstResult := 0, len(ep.Events)
	for p, ev := range ep.Events {
		switch {
		case ev.Type == episode.EventCall && ev.Call != nil && ev.Call.By != episode.Proxy:
			c := ev.Call
			at[c.Index], by[c.Index] = p, -1
			if kinds[c.Tool] == episode.Write {
				writes++
			}
			if !rep.Covered[c.Index] {
				continue
			}
			lb := flow.CallLabel(c.Tool, c.Args)
			if s, ok := stretch[lb]; !ok || s != writes {
				if len(kept[lb]) == 0 {
					panic("bound: a covered call without its lookup: " + lb)
				}
				stretch[lb], covering[lb], kept[lb] = writes, kept[lb][0], kept[lb][1:]
			}
			by[c.Index] = covering[lb]
			if cs.all[by[c.Index]].site != rep.By[c.Index] {
				panic("bound: a covered call's lookup is not its site's: " + lb)
			}
		case ev.Type == episode.EventResult && ev.Result != nil && firstResult == len(ep.Events):
			if ci := ev.Result.CallIndex; ci >= 0 && ci < len(calls) && calls[ci].By != episode.Proxy {
				firstResult = p
			}
		}
	}
	// The conversation ceiling's turns, as the replay counts them: the
	// turns the audit lists missed calls of, and those saved.
	missed := map[int]bool{}
	a, _ := audit.Walk(g, ep, audit.Options{Rule: rule, Caps: boundCaps, Missed: func(_ *episode.Episode, c *episode.Call) { missed[c.Turn] = true }})
	defer func(before int) {
		if cs.ceiling-before != int(a.Total.CeilingSaid) {
			panic("bound: the conversation ceiling's turns are not the audit's")
		}
	}(cs.ceiling)
	for _, t := range ep.Turns {
		agent := t.AgentCalls(calls)
		if len(agent) == 0 {
			continue
		}
		cs.toolTurns++
		var need []int
		for _, ci := range agent {
			if by[ci] < 0 {
				need = nil
				break
			}
			if !slices.Contains(need, by[ci]) {
				need = append(need, by[ci])
			}
		}
		if need == nil && !missed[t.Index] {
			continue
		}
		cs.ceiling++
		if at[agent[0]] > firstResult {
			cs.afterCall++
		}
		if need != nil {
			cs.turns = append(cs.turns, need)
		}
	}
}

// printBound prints the bound of each domain's held-out replay under rule
// (the rows above it): the candidates, and the turns each grouping's
// choice saves at each precision floor, with the precision by agent model
// of (a) and (b).
func printBound(out io.Writer, eps []*episode.Episode, folds int, rule flow.Rule, conversation bool) {
	if !conversation {
		eps = withoutMessages(eps)
	}
	fmt.Fprintf(out, "\nbound: every lookup the flow would make (no threshold, held-out gate or caps), groups chosen by descending hit rate while the precision stays at the floor\n")
	for _, domain := range []string{"retail", "airline"} {
		var de []*episode.Episode
		for _, ep := range eps {
			if ep.Domain == domain {
				de = append(de, ep)
			}
		}
		f := learnHeldOut(de, domain, folds, rule.Decider)
		if f == nil {
			fmt.Fprintf(out, "  %s: no flow\n", domain)
			continue
		}
		var def replay
		var cs candidates
		g := boundFlow(f)
		bound := flow.Rule{Decider: flow.ArbiterDecider, Threshold: rule.Threshold}
		for _, ep := range de {
			def.add(replayEpisode(f, ep, rule))
			cs.collect(g, ep, bound)
		}
		printDomainBound(out, domain, def, &cs)
	}
}

func printDomainBound(out io.Writer, domain string, def replay, cs *candidates) {
	hits := 0
	for _, c := range cs.all {
		if c.hit {
			hits++
		}
	}
	all := make([]bool, len(cs.all))
	for i := range all {
		all[i] = true
	}
	w := newTable(out)
	fmt.Fprintf(w, "  %s\ttool turns\tceiling: results\t+ constants\t+ conversation\t+ what the candidates save\tafter a call\tcandidates\thits\tall save\n", domain)
	fmt.Fprintf(w, "  \t%d\t%d (%s)\t%d (%s)\t%d (%s)\t%d (%s)\t%d (%s)\t%d\t%d (%s)\t%d (%s)\n", cs.toolTurns,
		def.ceiling[0], pct(def.ceiling[0], def.toolTurns), def.ceiling[1], pct(def.ceiling[1], def.toolTurns), def.ceiling[2], pct(def.ceiling[2], def.toolTurns),
		cs.ceiling, pct(cs.ceiling, cs.toolTurns), cs.afterCall, pct(cs.afterCall, cs.toolTurns),
		len(cs.all), hits, pct(hits, len(cs.all)), savedBy(cs.turns, all), pct(savedBy(cs.turns, all), cs.toolTurns))
	w.Flush()
	defP := 0.0
	if def.lookups > 0 {
		defP = float64(def.lookups-def.detours) / float64(def.lookups)
	}
	fmt.Fprintf(out, "  the replay: %d turns saved (%s) at %s\n", def.saved, pct(def.saved, def.toolTurns), pct(def.lookups-def.detours, def.lookups))
	w = newTable(out)
	fmt.Fprintf(w, "    precision ≥\tgrouping\tgroups\tlookups\tprecision\tturns saved\tof the after-call ceiling\n")
	floors := append(slices.Clone(boundPrecisions), defP)
	type modelRow struct{ hits, offers int }
	byModel := map[string][]modelRow{} // model → (a), (b) at each floor
	var cols []string
	for fi, p := range floors {
		name := fmt.Sprintf("%.0f%%", 100*p)
		if fi == len(floors)-1 {
			name = fmt.Sprintf("%.1f%% (the replay's)", 100*p)
		}
		for gi, gr := range groupings {
			chosen := cs.chosenBy(gr.key, p)
			n, h := 0, 0
			for i, c := range cs.all {
				if chosen[i] {
					n++
					if c.hit {
						h++
					}
				}
			}
			groups := map[string]bool{}
			for i := range cs.all {
				if chosen[i] {
					groups[gr.key(&cs.all[i])] = true
				}
			}
			s := savedBy(cs.turns, chosen)
			fmt.Fprintf(w, "    %s\t%s\t%d\t%d\t%s\t%d (%s)\t%s\n", name, gr.name, len(groups), n, pct(h, n), s, pct(s, cs.toolTurns), pct(s, cs.afterCall))
			if gi >= 2 {
				continue // an oracle's precision by model says nothing a rule could do
			}
			cols = append(cols, fmt.Sprintf("%s %s", strings.Fields(gr.name)[0], strings.Fields(name)[0]))
			col := len(cols) - 1
			for i, c := range cs.all {
				rows := byModel[c.model]
				for len(rows) <= col {
					rows = append(rows, modelRow{})
				}
				if chosen[i] {
					rows[col].offers++
					if c.hit {
						rows[col].hits++
					}
				}
				byModel[c.model] = rows
			}
		}
	}
	w.Flush()
	w = newTable(out)
	fmt.Fprintf(w, "    precision by agent model\t%s\n", strings.Join(cols, "\t"))
	models := make([]string, 0, len(byModel))
	for m := range byModel {
		models = append(models, m)
	}
	slices.Sort(models)
	for _, m := range models {
		fmt.Fprintf(w, "    %s", m)
		for _, r := range byModel[m] {
			fmt.Fprintf(w, "\t%s of %d", pct(r.hits, r.offers), r.offers)
		}
		fmt.Fprintln(w)
	}
	w.Flush()
}

func newTable(out io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(out, 0, 0, 2, ' ', 0) }

// learnHeldOut learns one flow from eps with folds by task, and fits its
// arbiter for the arbiter decider, as heldOut does.
func learnHeldOut(eps []*episode.Episode, domain string, folds int, d flow.Decider) *flow.Flow {
	l := learn.New(learn.Options{Domain: domain, Folds: folds, Positions: withLevers["position"], Descriptions: withLevers["describe"], WordDates: withLevers["date"], SaidConditions: withLevers["words"], Rest: withLevers["rest"], Cues: withLevers["cues"]})
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
