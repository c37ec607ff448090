// Package drift says what changed between a flow and the sessions recorded
// since it was learned (issue 6, point 3): tools added or removed, input
// contracts changed, sites whose reach or binding match rate moved beyond
// chance, and frequent sites the flow lacks.
//
// Compare takes two flows: the one served, and one learned the same way
// from the new sessions (hoist drift learns it with learn.FromSource, so both
// count sites, reach and bindings by the same code). It is a pure function.
//
// # The tests
//
// Each rate is a proportion k/n of a site's occurrences: a lookup's reach
// (k = reach, n = the site's count) and a binding's match rate (k = matched,
// n = the lookup's reach; for a fan-out, used of calls). Each rate seen in
// both the flow and the sessions is compared with the pooled two-proportion
// z test (stats.TwoProportionZ). With m such tests, a rate has drifted when
// its two-sided p-value is below α/m (the Bonferroni correction, which keeps
// the chance of any false alarm among the m tests at most α, whatever their
// dependence). Beside each test the report gives both rates with their
// Wilson intervals at level 1 − α.
package drift

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hoist-mcp/hoist/earned"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/stats"
)

// DefaultAlpha is the family-wise error rate of the rate tests.
const DefaultAlpha = 0.05

// Options configures Compare.
type Options struct {
	// Alpha is the family-wise error rate; 0 means DefaultAlpha.
	Alpha float64
	// MinSupport is the least count a new site needs to be reported; 0
	// means the flow's min_support (at least 1).
	MinSupport int
	// Also is the sessions' flow learned the other way round: now keeps a
	// reference that met one value in the sessions (learn's
	// KeepReferences), Also writes it as that value, as the flow served
	// was learned. A binding of the flow is looked for in now, then in
	// Also: a few sessions in which a reference met one value still
	// matched it, and a constant of the flow is still found. Nil: now
	// alone.
	Also *flow.Flow
}

// Report is what changed. Drift is true when any finding is.
type Report struct {
	Drift bool `json:"drift"`
	// Alpha is the family-wise error rate, Tests the number of rate tests
	// and Threshold the p-value each must reach to drift: Alpha/Tests.
	Alpha      float64 `json:"alpha"`
	Correction string  `json:"correction"`
	Tests      int     `json:"tests"`
	Threshold  float64 `json:"threshold"`
	MinSupport int     `json:"min_support"`
	// FlowEpisodes and Episodes are how many episodes each side counts.
	FlowEpisodes int `json:"flow_episodes"`
	Episodes     int `json:"episodes"`

	Added     []string         `json:"tools_added"`
	Removed   []string         `json:"tools_removed"`
	Contracts []ContractChange `json:"contracts_changed"`
	Rates     []Rate           `json:"rates"`
	NewSites  []NewSite        `json:"new_sites"`
	// Unseen are the flow's sites that did not occur in the sessions (not
	// drift: they may be rare).
	Unseen []string `json:"unseen_sites"`
	// Served is set when some sessions served the flow: what the proxy's
	// lookups earned in them, which the sessions' counts take as the
	// agent's calls (hoist drift counts a lookup whose hit estimate is at
	// least ½ as the agent's own call).
	Served *Served `json:"served,omitempty"`
}

// Served is what the proxy's lookups earned in the sessions that served
// the flow (package earned, as hoist audit reports it).
type Served struct {
	Sessions int    `json:"sessions"`
	Lookups  int    `json:"lookups"`
	Hits     Bounds `json:"hits"`
	Saved    Bounds `json:"saved_turns"`
	// Counted is how many of the lookups were counted as the agent's calls.
	Counted int `json:"counted_as_calls"`
}

// Bounds are an estimate with its lower and upper bound: what a served
// lookup earned, as package earned defines it for every report.
type Bounds = earned.Bounds

// ContractChange is a tool listed with another input contract or kind than
// the flow pinned.
type ContractChange struct {
	Tool    string   `json:"tool"`
	Changes []string `json:"changes"`
}

// Rate is one rate tested: a lookup's reach at a site, or a binding's match
// rate.
type Rate struct {
	Site    string `json:"site"`
	Lookup  string `json:"lookup"`
	Measure string `json:"measure"` // "reach" or "binding"
	// Binding is the binding's arguments, for a binding rate.
	Binding string     `json:"binding,omitempty"`
	Flow    Proportion `json:"flow"`
	Now     Proportion `json:"sessions"`
	Z       float64    `json:"z"`
	P       float64    `json:"p"`
	Drift   bool       `json:"drift"`
}

// Proportion is k of n with its Wilson interval.
type Proportion struct {
	K    int     `json:"k"`
	N    int     `json:"n"`
	Rate float64 `json:"rate"`
	Lo   float64 `json:"lo"`
	Hi   float64 `json:"hi"`
}

// NewSite is a site of the sessions that the flow lacks.
type NewSite struct {
	Site  string `json:"site"`
	Count int    `json:"count"`
}

// SiteName names a site as reports do: the tool, and "(failed)" for a failed
// call.
func SiteName(s *flow.Site) string {
	if s.Failed {
		return s.Tool + " (failed)"
	}
	return s.Tool
}

// Compare reports what changed from old, the flow served, to now, a flow
// learned from the new sessions with a min_support of 1 (so that every
// binding that matched at all is counted).
func Compare(old, now *flow.Flow, opt Options) *Report {
	alpha := opt.Alpha
	if alpha <= 0 || alpha >= 1 {
		alpha = DefaultAlpha
	}
	minSup := opt.MinSupport
	if minSup <= 0 {
		minSup = max(old.MinSupport, 1)
	}
	r := &Report{
		Alpha: alpha, Correction: "bonferroni", MinSupport: minSup,
		FlowEpisodes: old.Learned.Episodes, Episodes: now.Learned.Episodes,
		Added: []string{}, Removed: []string{}, Contracts: []ContractChange{},
		Rates: []Rate{}, NewSites: []NewSite{}, Unseen: []string{},
	}
	compareTools(r, old, now)

	oldSites := map[string]*flow.Site{}
	for i := range old.Sites {
		oldSites[SiteName(&old.Sites[i])] = &old.Sites[i]
	}
	nowSites := map[string]*flow.Site{}
	for i := range now.Sites {
		s := &now.Sites[i]
		nowSites[SiteName(s)] = s
		if _, ok := oldSites[SiteName(s)]; !ok && s.Count.N >= minSup {
			r.NewSites = append(r.NewSites, NewSite{Site: SiteName(s), Count: s.Count.N})
		}
	}
	for i := range old.Sites {
		ps := &old.Sites[i]
		ns, ok := nowSites[SiteName(ps)]
		if !ok {
			r.Unseen = append(r.Unseen, SiteName(ps))
			continue
		}
		compareSite(r, ps, ns, also(opt.Also, SiteName(ps)))
	}
	sort.Slice(r.NewSites, func(i, j int) bool {
		if r.NewSites[i].Count != r.NewSites[j].Count {
			return r.NewSites[i].Count > r.NewSites[j].Count
		}
		return r.NewSites[i].Site < r.NewSites[j].Site
	})

	level := 1 - alpha
	for i := range r.Rates {
		x := &r.Rates[i]
		x.Flow.fill(level)
		x.Now.fill(level)
		x.Z, x.P = stats.TwoProportionZ(x.Flow.K, x.Flow.N, x.Now.K, x.Now.N)
	}
	r.Tests = len(r.Rates)
	if r.Tests > 0 {
		r.Threshold = alpha / float64(r.Tests)
	}
	for i := range r.Rates {
		x := &r.Rates[i]
		x.Drift = x.P < r.Threshold
		r.Drift = r.Drift || x.Drift
	}
	r.Drift = r.Drift || len(r.Added) > 0 || len(r.Removed) > 0 || len(r.Contracts) > 0 || len(r.NewSites) > 0
	return r
}

func (p *Proportion) fill(level float64) {
	p.Rate = float64(p.K) / float64(p.N)
	p.Lo, p.Hi = stats.Wilson(p.K, p.N, level)
}

// compareTools finds tools added, removed and changed. Only what the
// sessions listed counts: a server whose tools the sessions never listed
// (no tools/list) removed nothing.
func compareTools(r *Report, old, now *flow.Flow) {
	listed := map[string]bool{} // servers whose tools the sessions listed
	for _, t := range now.Tools {
		if t.Input != nil {
			listed[t.Server] = true
		}
	}
	for name, t := range now.Tools {
		if t.Input == nil {
			continue
		}
		o, ok := old.Tools[name]
		if !ok {
			r.Added = append(r.Added, name)
			continue
		}
		var changes []string
		if o.Kind != t.Kind {
			changes = append(changes, fmt.Sprintf("kind %s → %s", o.Kind, t.Kind))
		}
		if o.Input != nil && !o.Input.Equal(t.Input) {
			changes = append(changes, contractDiff(o.Input, t.Input)...)
		}
		if len(changes) > 0 {
			r.Contracts = append(r.Contracts, ContractChange{Tool: name, Changes: changes})
		}
	}
	for name, o := range old.Tools {
		if !listed[o.Server] {
			continue
		}
		if t, ok := now.Tools[name]; !ok || t.Input == nil {
			r.Removed = append(r.Removed, name)
		}
	}
	sort.Strings(r.Added)
	sort.Strings(r.Removed)
	sort.Slice(r.Contracts, func(i, j int) bool { return r.Contracts[i].Tool < r.Contracts[j].Tool })
}

// contractDiff says, argument by argument, how a contract changed.
func contractDiff(old, now flow.Contract) []string {
	var out []string
	names := map[string]bool{}
	for k := range old {
		names[k] = true
	}
	for k := range now {
		names[k] = true
	}
	sorted := make([]string, 0, len(names))
	for k := range names {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		o, inOld := old[k]
		n, inNow := now[k]
		switch {
		case !inNow:
			out = append(out, "argument "+k+" removed")
		case !inOld:
			out = append(out, "argument "+k+" added ("+argString(n)+")")
		case o != n:
			out = append(out, "argument "+k+": "+argString(o)+" → "+argString(n))
		}
	}
	return out
}

func argString(a flow.Arg) string {
	s := a.Type
	if s == "" {
		s = "any"
	}
	if a.Required {
		s += ", required"
	}
	return s
}

// compareSite adds the rate tests of one site seen on both sides: each
// lookup's reach, and each binding's match rate where the lookup was reached
// on both sides.
func compareSite(r *Report, ps, ns, as *flow.Site) {
	site := SiteName(ps)
	nowLookups := map[string]*flow.Lookup{}
	for i := range ns.Lookups {
		nowLookups[ns.Lookups[i].Tool] = &ns.Lookups[i]
	}
	alsoLookups := map[string]*flow.Lookup{}
	if as != nil {
		for i := range as.Lookups {
			alsoLookups[as.Lookups[i].Tool] = &as.Lookups[i]
		}
	}
	oldLookups := map[string]*flow.Lookup{}
	var tools []string
	for i := range ps.Lookups {
		oldLookups[ps.Lookups[i].Tool] = &ps.Lookups[i]
		tools = append(tools, ps.Lookups[i].Tool)
	}
	for i := range ns.Lookups {
		if _, ok := oldLookups[ns.Lookups[i].Tool]; !ok {
			tools = append(tools, ns.Lookups[i].Tool)
		}
	}
	sort.Strings(tools)
	for _, tool := range tools {
		ol, nl := oldLookups[tool], nowLookups[tool]
		reach := func(l *flow.Lookup) int {
			if l == nil {
				return 0
			}
			return l.Reach.N
		}
		if ps.Count.N > 0 && ns.Count.N > 0 {
			r.Rates = append(r.Rates, Rate{Site: site, Lookup: tool, Measure: "reach",
				Flow: Proportion{K: reach(ol), N: ps.Count.N}, Now: Proportion{K: reach(nl), N: ns.Count.N}})
		}
		if ol == nil || nl == nil || ol.Reach.N == 0 || nl.Reach.N == 0 {
			continue
		}
		nowBound := map[string]*flow.Bound{}
		if al := alsoLookups[tool]; al != nil {
			for i := range al.Bindings {
				nowBound[boundKey(&al.Bindings[i])] = &al.Bindings[i]
			}
		}
		for i := range nl.Bindings {
			nowBound[boundKey(&nl.Bindings[i])] = &nl.Bindings[i]
		}
		for i := range ol.Bindings {
			ob := &ol.Bindings[i]
			key := boundKey(ob)
			k1, n1 := ob.Matched.N, ol.Reach.N
			k2, n2 := 0, nl.Reach.N
			nb := nowBound[key]
			if ob.Calls != nil && ob.Used != nil {
				k1, n1 = ob.Used.N, ob.Calls.N
				k2, n2 = 0, 0
				if nb != nil && nb.Calls != nil && nb.Used != nil {
					k2, n2 = nb.Used.N, nb.Calls.N
				}
			} else if nb != nil {
				k2 = nb.Matched.N
			}
			if n1 == 0 || n2 == 0 {
				continue
			}
			r.Rates = append(r.Rates, Rate{Site: site, Lookup: tool, Measure: "binding", Binding: key,
				Flow: Proportion{K: k1, N: n1}, Now: Proportion{K: k2, N: n2}})
		}
	}
}

// also returns the site of that name in f, or nil.
func also(f *flow.Flow, name string) *flow.Site {
	if f == nil {
		return nil
	}
	for i := range f.Sites {
		if SiteName(&f.Sites[i]) == name {
			return &f.Sites[i]
		}
	}
	return nil
}

// boundKey is a binding's arguments as text, "arg=expr, …", sorted.
func boundKey(b *flow.Bound) string {
	parts := make([]string, 0, len(b.Args))
	for k, x := range b.Args {
		parts = append(parts, k+"="+x.String())
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// Findings counts what drifted: tools, contracts, rates and new sites.
func (r *Report) Findings() int {
	n := len(r.Added) + len(r.Removed) + len(r.Contracts) + len(r.NewSites)
	for _, x := range r.Rates {
		if x.Drift {
			n++
		}
	}
	return n
}
