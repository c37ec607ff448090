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
// it is covered (the replay's turn rule). A second set of candidates
// offers every binding of each lookup that binds, each as a lookup of its
// own, not only the one the flow chooses.
//
// The candidates are grouped, and groups chosen greedily by descending
// hit rate while the precision of the lookups made stays at a floor
// (choice.choose): by site, lookup and binding (what a rule fixed in the
// flow could choose), the same by agent model (what a perfect gate by
// agent could), the same by episode (what an oracle that knows each
// session could: the bound for any per-session signal), and each lookup
// alone (an oracle that knows each lookup's outcome: every hit, no
// detour). The turns the lookups made save are the bound at that floor.
//
// A call several lookups offered at one decision is made once, by any of
// their groups; a lookup a chained decision offered is made only when the
// lookup whose answer offered it is. The greedy choice is not proven the
// best: a finer grouping keeps the coarser one's choice where that saves
// more, and only (d) is exact.
var boundFlag = flag.Bool("bound", false, "after the replay, print the bound: the turns a choice of the flow's own lookups could save at a precision of 80%, 85% and the replay's own, by site, lookup and binding, by agent model too, by episode too, and lookup by lookup")

// boundPrecisions are the precision floors the bound is printed at, beside
// the replay's own.
var boundPrecisions = []float64{0.80, 0.85}

// candidate is one lookup the flow would make with every gate off.
type candidate struct {
	// by are the lookups of the flow that offered this call at its
	// decision, the one made first: any of them makes it.
	by             []offeredBy
	model, episode string
	hit            bool
	n              int // its index among the domain's candidates
}

// offeredBy is a lookup as a rule fixed in the flow names it, and the
// candidate whose answer was the site that offered it (a chained
// decision), or -1 for the agent's own call: made only when that one is.
type offeredBy struct {
	site, lookup, binding string
	up                    int
}

func (o offeredBy) String() string { return o.site + "\t" + o.lookup + "\t" + o.binding }

// groupings are the keys candidates are chosen by: what a rule could tell
// apart. (d) knows each lookup's outcome: it makes every hit and no
// detour, so it saves every turn the candidates can.
var groupings = []struct {
	name string
	key  func(o offeredBy, c *candidate) string
}{
	{"(a) site, lookup, binding", func(o offeredBy, c *candidate) string { return o.String() }},
	{"(b) … and agent model", func(o offeredBy, c *candidate) string { return o.String() + "\t" + c.model }},
	{"(c) … and episode", func(o offeredBy, c *candidate) string { return o.String() + "\t" + c.episode }},
	{"(d) each lookup alone", func(o offeredBy, c *candidate) string { return fmt.Sprint(c.n) }},
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

// choice is the candidates grouped by a key: a rule takes groups, and
// makes a candidate when one of its lookups' groups is taken and that
// lookup's site was made (the agent's call, or a candidate made).
type choice struct {
	groups []group
	hit    []bool
	in     [][]int // each candidate's lookups' groups
	up     [][]int // each candidate's lookups' sites: a candidate, or -1
	down   [][]int // the candidates a candidate's answer offered
}

// group is the candidates a key makes.
type group struct {
	key     string
	members []int
	hits    int
}

// makeable reports whether candidate i is made with the groups taken and
// the candidates made.
func (ch *choice) makeable(i int, taken, made []bool) bool {
	for j, g := range ch.in[i] {
		if taken[g] && (ch.up[i][j] < 0 || made[ch.up[i][j]]) {
			return true
		}
	}
	return false
}

// take takes group g and returns the candidates it makes: its own, and
// those chained from them.
func (ch *choice) take(g int, taken, made []bool) (added []int) {
	taken[g] = true
	queue := slices.Clone(ch.groups[g].members)
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		if made[i] || !ch.makeable(i, taken, made) {
			continue
		}
		made[i] = true
		added = append(added, i)
		queue = append(queue, ch.down[i]...)
	}
	return added
}

// choose returns which candidates a precision floor p lets be made, and
// the groups it takes, in the order taken. In descending order of their hit rate (more
// candidates first among equals, then by key), each group is taken when
// the precision of every candidate made stays at least p with those it
// adds, and it adds a hit; passes repeat while one takes a group (one
// whose site a later group makes may be taken then). A candidate several
// groups make is made, and counted, once.
func (ch *choice) choose(p float64) (made []bool, taken []int) {
	order := make([]int, len(ch.groups))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int {
		a, b := ch.groups[i], ch.groups[j]
		// a.hits/len(a.members) > b.hits/len(b.members), without division.
		return cmp.Or(cmp.Compare(b.hits*len(a.members), a.hits*len(b.members)), cmp.Compare(len(b.members), len(a.members)), strings.Compare(a.key, b.key))
	})
	made = make([]bool, len(ch.hit))
	took := make([]bool, len(ch.groups))
	offers, hits := 0, 0
	for more := true; more; {
		more = false
		for _, g := range order {
			if took[g] || ch.groups[g].hits == 0 {
				continue
			}
			added := ch.take(g, took, made)
			n, h := len(added), 0
			for _, c := range added {
				if ch.hit[c] {
					h++
				}
			}
			if h == 0 || float64(hits+h) < p*float64(offers+n)-1e-9 {
				took[g] = false
				for _, c := range added {
					made[c] = false
				}
				continue
			}
			offers, hits, more = offers+n, hits+h, true
			taken = append(taken, g)
		}
	}
	return made, taken
}

// savedBy returns the turns a choice of candidates saves: those whose
// every covering candidate is made.
func savedBy(turns [][]int, made []bool) int {
	n := 0
	for _, t := range turns {
		all := true
		for _, c := range t {
			all = all && made[c]
		}
		if all {
			n++
		}
	}
	return n
}

// chosenBy is choose over the candidates grouped by key; taken are the
// groups taken, in the order taken.
func (cs *candidates) chosenBy(key func(offeredBy, *candidate) string, p float64) (made []bool, taken []group) {
	ch := choice{hit: make([]bool, len(cs.all)), in: make([][]int, len(cs.all)), up: make([][]int, len(cs.all)), down: make([][]int, len(cs.all))}
	index := map[string]int{}
	for i := range cs.all {
		c := &cs.all[i]
		ch.hit[i] = c.hit
		for _, o := range c.by {
			k := key(o, c)
			g, ok := index[k]
			if !ok {
				g = len(ch.groups)
				index[k] = g
				ch.groups = append(ch.groups, group{key: k})
			}
			ch.in[i] = append(ch.in[i], g)
			ch.up[i] = append(ch.up[i], o.up)
			if o.up >= 0 {
				ch.down[o.up] = append(ch.down[o.up], i)
			}
			if m := ch.groups[g].members; len(m) > 0 && m[len(m)-1] == i {
				continue // two of its lookups in one group
			}
			ch.groups[g].members = append(ch.groups[g].members, i)
			if c.hit {
				ch.groups[g].hits++
			}
		}
	}
	made, gs := ch.choose(p)
	for _, g := range gs {
		taken = append(taken, ch.groups[g])
	}
	return made, taken
}

// boundFlow is the flow f with every gate off: an arbiter that scores
// every offer 1 and holds no held-out counts. With every binding, each
// binding of a lookup is a lookup of its own, so each offers where it
// binds, not only the one the flow would choose.
func boundFlow(f *flow.Flow, everyBinding bool) *flow.Flow {
	g := *f
	g.Arbiter = &flow.Arbiter{Features: []string{flow.FeatureBias}, Weights: []float64{100}} // σ(100) is 1 in float64
	if !everyBinding {
		return &g
	}
	g.Sites = make([]flow.Site, len(f.Sites))
	for si, s := range f.Sites {
		s.Lookups = nil
		for _, l := range f.Sites[si].Lookups {
			for _, b := range l.Bindings {
				one := l
				one.Bindings = []flow.Bound{b}
				s.Lookups = append(s.Lookups, one)
			}
		}
		g.Sites[si] = s
	}
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
	// The site of each offer of a run: the offers a decision shows first
	// were offered by the answer to the lookup the decision before took
	// (Run.Answer adds them), or, at the first, by the agent's call.
	site := map[offeredBy]int{}
	answered := -1
	key := func(o *flow.Offer) offeredBy {
		return offeredBy{site: o.From, lookup: o.Tool, binding: flow.OfferBinding(o.Binding) + "\x00" + string(o.Args)}
	}
	rep := flow.ReplayEpisode(g, ep, flow.ReplayOptions{Rule: rule, Caps: boundCaps, Decision: func(d *flow.Decision, hit []bool) {
		if d.Site == "decide#0" {
			clear(site)
			answered = -1
		}
		for i := range d.Offers {
			if _, ok := site[key(&d.Offers[i])]; !ok {
				site[key(&d.Offers[i])] = answered
			}
		}
		answered = -1
		if d.Taken < 0 {
			return
		}
		o := &d.Offers[d.Taken]
		c := candidate{model: model, episode: ep.ID, hit: hit[d.Taken], n: len(cs.all)}
		// The decision's offers of the same call, the one taken first:
		// the session makes it once, so the others are never offered
		// again.
		add := func(x *flow.Offer) {
			by := offeredBy{x.From, x.Tool, flow.OfferBinding(x.Binding), site[key(x)]}
			if !slices.Contains(c.by, by) {
				c.by = append(c.by, by)
			}
		}
		add(o)
		for i := range d.Offers {
			if d.Offers[i].Label() == o.Label() {
				add(&d.Offers[i])
			}
		}
		if c.hit {
			answered = c.n
		}
		cs.all = append(cs.all, c)
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
			if cs.all[by[c.Index]].by[0].site != rep.By[c.Index] {
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
// of (a) and (b); for the flow's lookups as it binds them, then for every
// binding.
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
		for _, ep := range de {
			def.add(replayEpisode(f, ep, rule))
		}
		for _, every := range []bool{false, true} {
			var cs candidates
			g := boundFlow(f, every)
			bound := flow.Rule{Decider: flow.ArbiterDecider, Threshold: rule.Threshold}
			for _, ep := range de {
				cs.collect(g, ep, bound)
			}
			name := domain + ", the binding each lookup chooses"
			if every {
				name = domain + ", every binding"
			}
			printDomainBound(out, name, def, &cs)
		}
	}
}

func printDomainBound(out io.Writer, name string, def replay, cs *candidates) {
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
	fmt.Fprintf(w, "  %s\ttool turns\tceiling: results\t+ constants\t+ conversation\t+ what the candidates save\tafter a call\tcandidates\thits\tall save\n", name)
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
	type tally struct{ hits, offers int }
	byModel := map[string][]tally{} // model → (a), (b) at each floor
	var cols []string
	gap := make([][2][]bool, len(boundPrecisions))  // (b)'s and (c)'s choice at each floor
	static := make([][]group, len(boundPrecisions)) // (a)'s groups at each floor
	for fi, p := range floors {
		floor := fmt.Sprintf("%.0f%%", 100*p)
		if fi == len(floors)-1 {
			floor = fmt.Sprintf("%.1f%% (the replay's)", 100*p)
		}
		var coarser []bool
		for gi, gr := range groupings {
			made, taken := cs.chosenBy(gr.key, p)
			groups := fmt.Sprint(len(taken))
			if gi == 0 && fi < len(boundPrecisions) {
				static[fi] = taken
			}
			if coarser != nil && gi < 3 && savedBy(cs.turns, coarser) > savedBy(cs.turns, made) {
				// The coarser grouping's choice is one of this one's:
				// the greedy choice found less.
				made, groups = coarser, "as above"
			}
			coarser = made
			if gi == 1 && fi < len(boundPrecisions) {
				gap[fi][0] = made
			}
			if gi == 2 && fi < len(boundPrecisions) {
				gap[fi][1] = made
			}
			var t tally
			for i, c := range cs.all {
				if made[i] {
					t.offers++
					if c.hit {
						t.hits++
					}
				}
			}
			s := savedBy(cs.turns, made)
			fmt.Fprintf(w, "    %s\t%s\t%s\t%d\t%s\t%d (%s)\t%s\n", floor, gr.name, groups, t.offers, pct(t.hits, t.offers), s, pct(s, cs.toolTurns), pct(s, cs.afterCall))
			if gi >= 2 {
				continue // an oracle's precision by model says nothing a rule could do
			}
			cols = append(cols, fmt.Sprintf("%s %s", strings.Fields(gr.name)[0], strings.Fields(floor)[0]))
			for i, c := range cs.all {
				rows := byModel[c.model]
				for len(rows) < len(cols) {
					rows = append(rows, tally{})
				}
				if made[i] {
					rows[len(cols)-1].offers++
					if c.hit {
						rows[len(cols)-1].hits++
					}
				}
				byModel[c.model] = rows
			}
		}
	}
	w.Flush()
	for fi, gs := range static {
		fmt.Fprintf(out, "    (a) takes at %.0f%%, in order: site → lookup binding: its candidates (hits)\n", 100*boundPrecisions[fi])
		for _, g := range gs {
			site, rest, _ := strings.Cut(g.key, "\t")
			fmt.Fprintf(out, "      %s → %s: %d (%d)\n", site, strings.Replace(rest, "\t", " ", 1), len(g.members), g.hits)
		}
	}
	printGap(out, cs, gap)
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

// printGap prints what (c) saves beyond (b) at each floor: the turns by
// the lookups they need (site, lookup, binding), most first: where a
// signal of the session, not of the agent, would pay.
func printGap(out io.Writer, cs *candidates, gap [][2][]bool) {
	turns := map[string][]int{}
	for fi, g := range gap {
		for _, t := range cs.turns {
			if savedBy([][]int{t}, g[0]) > 0 || savedBy([][]int{t}, g[1]) == 0 {
				continue
			}
			var keys []string
			for _, c := range t {
				o := cs.all[c].by[0]
				k := o.site + " → " + o.lookup + " " + o.binding
				if !slices.Contains(keys, k) {
					keys = append(keys, k)
				}
			}
			slices.Sort(keys)
			k := strings.Join(keys, " + ")
			if turns[k] == nil {
				turns[k] = make([]int, len(gap))
			}
			turns[k][fi]++
		}
	}
	keys := make([]string, 0, len(turns))
	for k := range turns {
		keys = append(keys, k)
	}
	sum := func(k string) int {
		n := 0
		for _, x := range turns[k] {
			n += x
		}
		return n
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(sum(b), sum(a)), strings.Compare(a, b)) })
	w := newTable(out)
	var head []string
	for _, p := range boundPrecisions {
		head = append(head, fmt.Sprintf("%.0f%%", 100*p))
	}
	fmt.Fprintf(w, "    turns (c) saves and (b) does not, by the lookups they need: site → lookup binding\t%s\n", strings.Join(head, "\t"))
	for i, k := range keys {
		if i == 6 {
			break
		}
		var n []string
		for _, x := range turns[k] {
			n = append(n, fmt.Sprint(x))
		}
		fmt.Fprintf(w, "      %s\t%s\n", k, strings.Join(n, "\t"))
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
