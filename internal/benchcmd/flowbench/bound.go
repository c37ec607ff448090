package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/hoist-mcp/hoist/audit"
	"github.com/hoist-mcp/hoist/binding"
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
)

// The bound (-bound) says how far any decision rule over a flow's own
// bindings could go, on the held-out replay the rows above it come from
// (docs/flow.md, "How far the bindings can go").
//
// The flow is served with every gate off: an arbiter that scores every
// offer 1 (so the threshold takes all, while the binding each lookup
// offers is still the one it chooses at the replay's threshold), no
// held-out gate, no cap on lookups or bytes (boundFlow). Every lookup the
// flow would make where its binding binds is then made: these are the
// candidates. Each is a hit or a detour by the replay's own rule, and
// covers the agent's calls it was the lookup of; a turn is saved when
// every call of it is covered (the replay's turn rule). A second flow
// offers every binding of each lookup that binds, each as a lookup of its
// own, not only the one the flow chooses.
//
// A rule then takes lookups (a lookup of a site, its binding the flow's
// choice; with every binding, a binding of it) greedily, in descending
// order of their hit rate served alone, each while the precision of every
// lookup made stays at a floor (greedy); each is tried by serving it with
// those taken and replaying the episodes of its scope, so the figures
// printed are the replay's, not an estimate. It takes them (a) for every
// episode: a rule fixed in the flow; (b) for the episodes of one agent
// model: a perfect gate by agent; (c) for one episode: an oracle that
// knows each session. (d) knows each lookup's outcome, takes every hit and
// no detour, and so saves every turn the candidates cover: the most a
// choice of these lookups saves, at any precision (a lookup served with
// fewer others may bind another result, through $last, but none of the
// rules saves more here). (a) to (c) are what a greedy
// choice finds, not proven the best of their kind: a finer scope keeps the
// coarser one's choice where that saves more.
var boundFlag = flag.Bool("bound", false, "after the replay, print the bound: the turns a choice of the flow's own lookups could save at a precision of 80%, 85% and the replay's own: fixed in the flow, by agent model, by episode, and lookup by lookup")

// boundPrecisions are the precision floors the bound is printed at, beside
// the replay's own.
var boundPrecisions = []float64{0.80, 0.85}

// candidate is one lookup the flow makes with every gate off.
type candidate struct {
	// by are the lookups (lookups.key) that offered this call at its
	// decision, the one made first: the session makes the call once.
	by  []string
	hit bool
}

// lookups are a flow served with every gate off (boundFlow), and what a
// rule over it takes: each lookup of a site, its binding the one the flow
// chooses where it is offered; or, with every binding, each binding of
// it, a lookup of its own.
type lookups struct {
	g     *flow.Flow
	every bool
}

// key names the lookup an offer is of, as a rule takes it: its site and
// tool, and with every binding its binding.
func (l lookups) key(o *flow.Offer) string {
	if !l.every {
		return o.From + "\t" + o.Tool
	}
	return o.From + "\t" + o.Tool + "\t" + flow.OfferBinding(o.Binding)
}

// candidates are a domain's candidate lookups and the turns they could
// save.
type candidates struct {
	all []candidate
	// turns are the tool-calling turns whose every call some candidate
	// covers: for each, the candidates that cover its calls, all needed;
	// turnAt is each one's index in its episode.
	turns  [][]int
	turnAt []int
	// toolTurns are the tool-calling turns; ceiling those within the
	// conversation ceiling, as the replay counts it with every candidate
	// made (every call's arguments in an earlier result, a constant or
	// what the customer said, or the turn saved), and afterCall those of
	// them after the first result of the session: before it no lookup can
	// be appended.
	toolTurns, ceiling, afterCall int
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

// tally counts lookups made, their hits, and the turns they saved.
type tally struct{ offers, hits, saved int }

func (t *tally) add(o tally) {
	t.offers += o.offers
	t.hits += o.hits
	t.saved += o.saved
}

// unit is what a rule takes: a lookup, in the episodes of its scope (all,
// one agent model's, one), with its lookups and hits served alone there.
type unit struct {
	key, scope string
	eps        []int // the scope's episodes
	alone      tally
}

// greedy returns the units a precision floor p lets a rule take, in the
// order taken. In descending order of their hit rate alone (more lookups
// first among equals, then by key and scope), each is tried: try(u) serves
// it with those taken and returns the change in lookups and hits, and
// keep(false) takes it back. It is kept when it adds a hit and the
// precision of every lookup made stays at least p. Passes repeat while one
// keeps a unit: a lookup whose site another lookup's answer is can pay
// once that one is taken.
func greedy(units []unit, p float64, try func(u int) (offers, hits int, keep func(bool))) []int {
	order := make([]int, len(units))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int {
		a, b := units[i], units[j]
		// a's rate > b's, without division.
		return cmp.Or(cmp.Compare(b.alone.hits*a.alone.offers, a.alone.hits*b.alone.offers), cmp.Compare(b.alone.offers, a.alone.offers),
			strings.Compare(a.key, b.key), strings.Compare(a.scope, b.scope))
	})
	var taken []int
	took := make([]bool, len(units))
	offers, hits := 0, 0
	for more := true; more; {
		more = false
		for _, u := range order {
			if took[u] || units[u].alone.hits == 0 {
				continue
			}
			n, h, keep := try(u)
			if h <= 0 || float64(hits+h) < p*float64(offers+n)-1e-9 {
				keep(false)
				continue
			}
			keep(true)
			took[u], more = true, true
			offers, hits = offers+n, hits+h
			taken = append(taken, u)
		}
	}
	return taken
}

// served is a choice of lookups served along a domain's episodes: the
// lookups each episode's flow keeps, and what replaying it did.
type served struct {
	l    lookups
	eps  []*episode.Episode
	rule flow.Rule
	keys []map[string]bool
	res  []tally
}

func newServed(l lookups, eps []*episode.Episode, rule flow.Rule) *served {
	s := &served{l: l, eps: eps, rule: rule, keys: make([]map[string]bool, len(eps)), res: make([]tally, len(eps))}
	for i := range s.keys {
		s.keys[i] = map[string]bool{}
	}
	return s
}

// replay replays episode i served a flow of its lookups alone.
func (s *served) replay(i int) tally {
	if len(s.keys[i]) == 0 {
		return tally{}
	}
	a, err := audit.Walk(s.l.only(s.keys[i]), s.eps[i], audit.Options{Rule: s.rule, Caps: boundCaps})
	if err != nil {
		return tally{}
	}
	return tally{offers: a.Total.Lookups, hits: a.Total.Hits, saved: int(a.Total.Saved)}
}

// try serves u's lookup in its episodes, for greedy.
func (s *served) try(u *unit) (offers, hits int, keep func(bool)) {
	old := make([]tally, len(u.eps))
	for j, i := range u.eps {
		old[j] = s.res[i]
		s.keys[i][u.key] = true
		s.res[i] = s.replay(i)
		offers += s.res[i].offers - old[j].offers
		hits += s.res[i].hits - old[j].hits
	}
	return offers, hits, func(ok bool) {
		if ok {
			return
		}
		for j, i := range u.eps {
			delete(s.keys[i], u.key)
			s.res[i] = old[j]
		}
	}
}

func (s *served) total() tally {
	var t tally
	for _, r := range s.res {
		t.add(r)
	}
	return t
}

func (s *served) clone() *served {
	c := *s
	c.keys = make([]map[string]bool, len(s.keys))
	for i, k := range s.keys {
		c.keys[i] = maps.Clone(k)
	}
	c.res = slices.Clone(s.res)
	return &c
}

// scopes are what a rule takes lookups for.
var scopes = []struct {
	name  string
	scope func(ep *episode.Episode) string
}{
	{"(a) fixed in the flow", func(*episode.Episode) string { return "" }},
	{"(b) by agent model", func(ep *episode.Episode) string { return modelOf(ep) }},
	{"(c) by episode", func(ep *episode.Episode) string { return ep.ID }},
}

func modelOf(ep *episode.Episode) string { return cmp.Or(ep.AgentModel, "(unknown)") }

// unitsOf returns the units of scope: each lookup of the candidates in
// each scope where, served alone, it makes a lookup in some episode; a
// unit is served in every episode of its scope (a lookup offered at
// another's answer may make one where alone it makes none).
func unitsOf(alone map[string][]tally, eps []*episode.Episode, scope func(*episode.Episode) string) []unit {
	of := make([]string, len(eps))
	for i, ep := range eps {
		of[i] = scope(ep)
	}
	var out []unit
	for _, k := range slices.Sorted(maps.Keys(alone)) {
		index := map[string]int{}
		for i, t := range alone[k] {
			if t.offers == 0 {
				continue
			}
			u, ok := index[of[i]]
			if !ok {
				u = len(out)
				index[of[i]] = u
				out = append(out, unit{key: k, scope: of[i]})
				for j := range eps {
					if of[j] == of[i] {
						out[u].eps = append(out[u].eps, j)
					}
				}
			}
			out[u].alone.add(t)
		}
	}
	return out
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
func (cs *candidates) collect(l lookups, ep *episode.Episode, rule flow.Rule) {
	g := l.g
	first := len(cs.all)
	var labels []string // of each lookup made, in order
	rep := flow.ReplayEpisode(g, ep, flow.ReplayOptions{Rule: rule, Caps: boundCaps, Decision: func(d *flow.Decision, hit []bool) {
		if d.Taken < 0 {
			return
		}
		o := &d.Offers[d.Taken]
		// The decision's offers of the same call, the one taken first:
		// the session makes it once, so the others are never offered
		// again.
		c := candidate{by: []string{l.key(o)}, hit: hit[d.Taken]}
		for i := range d.Offers {
			if k := l.key(&d.Offers[i]); d.Offers[i].Label() == o.Label() && !slices.Contains(c.by, k) {
				c.by = append(c.by, k)
			}
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
			if site, _, _ := strings.Cut(cs.all[by[c.Index]].by[0], "\t"); site != rep.By[c.Index] {
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
			cs.turnAt = append(cs.turnAt, t.Index)
		}
	}
}

// printBound prints the bound of each domain's held-out replay under rule
// (the rows above it), for the flow's lookups as it binds them, then for
// every binding.
func printBound(out io.Writer, eps []*episode.Episode, folds int, rule flow.Rule, conversation bool) {
	if !conversation {
		eps = withoutMessages(eps)
	}
	fmt.Fprintf(out, "\nbound: the flow's lookups with no threshold, held-out gate or caps; a rule takes them by descending hit rate alone while the precision of all it makes stays at the floor, served and replayed\n")
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
			l := lookups{g: boundFlow(f, every), every: every}
			bound := flow.Rule{Decider: flow.ArbiterDecider, Threshold: rule.Threshold}
			var cs candidates
			for _, ep := range de {
				cs.collect(l, ep, bound)
			}
			// Each lookup served alone, episode by episode.
			alone := map[string][]tally{}
			for _, c := range cs.all {
				for _, k := range c.by {
					alone[k] = nil
				}
			}
			for k := range alone {
				s := newServed(l, de, bound)
				for i := range de {
					s.keys[i][k] = true
					alone[k] = append(alone[k], s.replay(i))
				}
			}
			name := domain + ", each lookup with the binding the flow chooses"
			if every {
				name = domain + ", every binding"
			}
			printDomainBound(out, name, def, &cs, l, de, bound, alone)
		}
	}
}

func printDomainBound(out io.Writer, name string, def replay, cs *candidates, l lookups, eps []*episode.Episode, rule flow.Rule, alone map[string][]tally) {
	hits := 0
	all := make([]bool, len(cs.all))
	for i, c := range cs.all {
		all[i] = true
		if c.hit {
			hits++
		}
	}
	allSave := savedBy(cs.turns, all)
	w := newTable(out)
	fmt.Fprintf(w, "  %s\ttool turns\tceiling: results\t+ constants\t+ conversation\t+ what the candidates save\tafter a call\tcandidates\thits\tall save\n", name)
	fmt.Fprintf(w, "  \t%d\t%d (%s)\t%d (%s)\t%d (%s)\t%d (%s)\t%d (%s)\t%d\t%d (%s)\t%d (%s)\n", cs.toolTurns,
		def.ceiling[0], pct(def.ceiling[0], def.toolTurns), def.ceiling[1], pct(def.ceiling[1], def.toolTurns), def.ceiling[2], pct(def.ceiling[2], def.toolTurns),
		cs.ceiling, pct(cs.ceiling, cs.toolTurns), cs.afterCall, pct(cs.afterCall, cs.toolTurns),
		len(cs.all), hits, pct(hits, len(cs.all)), allSave, pct(allSave, cs.toolTurns))
	w.Flush()
	defP := 0.0
	if def.lookups > 0 {
		defP = float64(def.lookups-def.detours) / float64(def.lookups)
	}
	fmt.Fprintf(out, "  the replay: %d turns saved (%s) at %s\n", def.saved, pct(def.saved, def.toolTurns), pct(def.lookups-def.detours, def.lookups))
	w = newTable(out)
	fmt.Fprintf(w, "    precision ≥\trule\tlookups taken\tlookups made\tprecision\tturns saved\tof the after-call ceiling\n")
	floors := append(slices.Clone(boundPrecisions), defP)
	byModel := map[string][]tally{} // model → (a), (b) at each floor
	var cols []string
	takes := make([][]unit, len(boundPrecisions))   // (a)'s lookups at each floor
	gap := make([][2]*served, len(boundPrecisions)) // (b)'s and (c)'s choice at each floor
	for fi, p := range floors {
		floor := fmt.Sprintf("%.0f%%", 100*p)
		if fi == len(floors)-1 {
			floor = fmt.Sprintf("%.1f%% (the replay's)", 100*p)
		}
		var coarser *served
		for si, sc := range scopes {
			s := newServed(l, eps, rule)
			units := unitsOf(alone, eps, sc.scope)
			taken := greedy(units, p, func(u int) (int, int, func(bool)) { return s.try(&units[u]) })
			n := fmt.Sprint(len(taken))
			if coarser != nil && coarser.total().saved > s.total().saved {
				// The coarser scope's choice is one of this one's: the
				// greedy choice found less.
				s, n = coarser.clone(), "as above"
			}
			coarser = s
			t := s.total()
			fmt.Fprintf(w, "    %s\t%s\t%s\t%d\t%s\t%d (%s)\t%s\n", floor, sc.name, n, t.offers, pct(t.hits, t.offers), t.saved, pct(t.saved, cs.toolTurns), pct(t.saved, cs.afterCall))
			if fi < len(boundPrecisions) {
				switch si {
				case 0:
					for _, u := range taken {
						takes[fi] = append(takes[fi], units[u])
					}
				case 1, 2:
					gap[fi][si-1] = s
				}
			}
			if si == 2 {
				continue // an oracle's precision by model says nothing a rule could do
			}
			cols = append(cols, fmt.Sprintf("%s %s", strings.Fields(sc.name)[0], strings.Fields(floor)[0]))
			for i, r := range s.res {
				m := modelOf(eps[i])
				rows := byModel[m]
				for len(rows) < len(cols) {
					rows = append(rows, tally{})
				}
				rows[len(cols)-1].add(r)
				byModel[m] = rows
			}
		}
		fmt.Fprintf(w, "    %s\t(d) lookup by lookup\t%d\t%d\t%s\t%d (%s)\t%s\n", floor, hits, hits, pct(hits, hits), allSave, pct(allSave, cs.toolTurns), pct(allSave, cs.afterCall))
	}
	w.Flush()
	for fi, us := range takes {
		fmt.Fprintf(out, "    (a) takes at %.0f%%, in order: site → lookup (and binding, with every binding): lookups (hits) served alone\n", 100*boundPrecisions[fi])
		for _, u := range us {
			site, rest, _ := strings.Cut(u.key, "\t")
			fmt.Fprintf(out, "      %s → %s: %d (%d)\n", site, strings.Replace(rest, "\t", " ", 1), u.alone.offers, u.alone.hits)
		}
	}
	printGap(out, l, eps, rule, gap)
	w = newTable(out)
	fmt.Fprintf(w, "    precision by agent model\t%s\n", strings.Join(cols, "\t"))
	for _, m := range slices.Sorted(maps.Keys(byModel)) {
		fmt.Fprintf(w, "    %s", m)
		for _, r := range byModel[m] {
			fmt.Fprintf(w, "\t%s of %d", pct(r.hits, r.offers), r.offers)
		}
		fmt.Fprintln(w)
	}
	w.Flush()
}

// printGap prints the turns (c) saves and (b) does not at each floor, by
// the lookups they need (site, lookup, binding), most first: where a
// signal of the session, not of the agent, would pay.
func printGap(out io.Writer, l lookups, eps []*episode.Episode, rule flow.Rule, gap [][2]*served) {
	turns := map[string][]int{}
	for fi, bc := range gap {
		b, c := bc[0], bc[1]
		for i, ep := range eps {
			if c.res[i].saved <= b.res[i].saved {
				continue
			}
			var byB, byC candidates
			byB.collect(lookups{l.only(b.keys[i]), l.every}, ep, rule)
			byC.collect(lookups{l.only(c.keys[i]), l.every}, ep, rule)
			for j, t := range byC.turns {
				if slices.Contains(byB.turnAt, byC.turnAt[j]) {
					continue
				}
				var keys []string
				for _, x := range t {
					site, rest, _ := strings.Cut(byC.all[x].by[0], "\t")
					if k := site + " → " + strings.Replace(rest, "\t", " ", 1); !slices.Contains(keys, k) {
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
	}
	sum := func(k string) int {
		n := 0
		for _, x := range turns[k] {
			n += x
		}
		return n
	}
	keys := slices.SortedFunc(maps.Keys(turns), func(a, b string) int { return cmp.Or(cmp.Compare(sum(b), sum(a)), strings.Compare(a, b)) })
	w := newTable(out)
	var head []string
	for _, p := range boundPrecisions {
		head = append(head, fmt.Sprintf("%.0f%%", 100*p))
	}
	fmt.Fprintf(w, "    turns (c) saves and (b) does not, by the lookups they need\t%s\n", strings.Join(head, "\t"))
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

// only is the flow with only the lookups keys name (as key gives them; a
// binding narrowed or not): a rule fixed in the flow.
func (l lookups) only(keys map[string]bool) *flow.Flow {
	text := func(args map[string]binding.Expr) string {
		m := map[string]string{}
		for k, e := range args {
			m[k] = e.String()
		}
		return flow.OfferBinding(m)
	}
	h := *l.g
	h.Sites = make([]flow.Site, len(l.g.Sites))
	for si, s := range l.g.Sites {
		s.Lookups = nil
		for _, lk := range l.g.Sites[si].Lookups {
			site := s.Tool + "\t" + lk.Tool
			if !l.every {
				if keys[site] {
					s.Lookups = append(s.Lookups, lk)
				}
				continue
			}
			var kept []flow.Bound
			for _, b := range lk.Bindings {
				in := keys[site+"\t"+text(b.Args)]
				if b.Narrow != nil {
					if n, ok := binding.Narrow(slices.Sorted(maps.Keys(b.Args)), b.Args); ok {
						in = in || keys[site+"\t"+text(n)]
					}
				}
				if in {
					kept = append(kept, b)
				}
			}
			if len(kept) > 0 {
				lk.Bindings = kept
				s.Lookups = append(s.Lookups, lk)
			}
		}
		h.Sites[si] = s
	}
	return &h
}
