package audit

import (
	"math"
	"math/rand/v2"
	"sort"

	"github.com/hoist-mcp/hoist/stats"
)

// Interval is an estimate with its 95% bootstrap interval (percentile, over
// episodes).
type Interval struct {
	Value float64 `json:"value"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
}

// Row is one line of the report: a site, a server, or the total.
type Row struct {
	Name string `json:"name"`
	Counts
	// Precision is Hits/Lookups; nil without lookups.
	Precision *Interval `json:"precision"`
	// Saved is the LLM turns saved as a share of all LLM turns.
	Saved Interval `json:"saved"`
	// Ceiling is the read-only ceiling as a share of all LLM turns; nil for
	// a site, which has none of its own.
	Ceiling *Interval `json:"ceiling,omitempty"`
}

// Report is hoist audit's report.
type Report struct {
	Episodes  int   `json:"episodes"`
	Turns     int   `json:"turns"`
	Resamples int   `json:"resamples"`
	Total     Row   `json:"total"`
	Servers   []Row `json:"servers"`
	Sites     []Row `json:"sites"`
}

// entry is one nonzero count of one episode in one row.
type entry struct {
	row            int
	lookups, hits  float64
	saved, ceiling float64
}

// Summarize sums the episodes' audits into a report, with 95% percentile
// bootstrap intervals over episodes (the cluster bootstrap of
// stats.BootstrapVec): episodes are drawn with replacement opt.Resamples
// times, and each ratio (hits/lookups, saved/turns, ceiling/turns) of every
// row is computed again on each draw, in one pass over each drawn episode's
// few nonzero counts; the interval is the 2.5th and 97.5th percentile.
func Summarize(eps []*Episode, opt Options) *Report {
	b := opt.Resamples
	if b == 0 {
		b = DefaultResamples
	}
	r := &Report{Episodes: len(eps), Resamples: b, Total: Row{Name: "total"}}
	// Rows: 0 is the total, then servers, then sites, each sorted by name.
	serverSet, siteSet := map[string]bool{}, map[string]bool{}
	for _, e := range eps {
		for k := range e.Servers {
			serverSet[k] = true
		}
		for k := range e.Sites {
			siteSet[k] = true
		}
	}
	servers, sites := sortedKeys(serverSet), sortedKeys(siteSet)
	rowOf := map[string]int{}
	names := []string{"total"}
	for _, s := range servers {
		rowOf["s\x00"+s] = len(names)
		names = append(names, s)
	}
	for _, s := range sites {
		rowOf["t\x00"+s] = len(names)
		names = append(names, s)
	}
	nrows := len(names)
	sums := make([]Counts, nrows)
	turns := make([]float64, len(eps))
	sparse := make([][]entry, len(eps))
	add := func(i, row int, c Counts) {
		sums[row].add(c)
		sparse[i] = append(sparse[i], entry{row, float64(c.Lookups), float64(c.Hits), c.Saved, c.Ceiling})
	}
	for i, e := range eps {
		r.Turns += e.Turns
		turns[i] = float64(e.Turns)
		add(i, 0, e.Total)
		for k, c := range e.Servers {
			add(i, rowOf["s\x00"+k], *c)
		}
		for k, c := range e.Sites {
			add(i, rowOf["t\x00"+k], *c)
		}
	}
	// Bootstrap: per row, the three ratios (precision, saved, ceiling) of
	// each resample, all from the same draws of episodes.
	var lo, hi []float64
	if len(eps) > 0 {
		rng := rand.New(rand.NewPCG(opt.Seed, 0x61756469740a))
		acc := make([]entry, nrows)
		lo, hi = stats.BootstrapVec(len(eps), b, 0.95, 3*nrows, func(idx []int, out []float64) {
			clear(acc)
			t := 0.0
			for _, i := range idx {
				t += turns[i]
				for _, en := range sparse[i] {
					a := &acc[en.row]
					a.lookups += en.lookups
					a.hits += en.hits
					a.saved += en.saved
					a.ceiling += en.ceiling
				}
			}
			for k, a := range acc {
				if a.lookups > 0 {
					out[3*k] = a.hits / a.lookups
				}
				if t > 0 {
					out[3*k+1] = a.saved / t
					out[3*k+2] = a.ceiling / t
				}
			}
		}, rng)
	}
	// bounds returns statistic j's interval, or v, v when it has none.
	bounds := func(j int, v float64) (float64, float64) {
		if lo == nil || math.IsNaN(lo[j]) {
			return v, v
		}
		return lo[j], hi[j]
	}
	turnsAll := float64(r.Turns)
	row := func(k int) Row {
		c := sums[k]
		c.Detours = c.Lookups - c.Hits
		out := Row{Name: names[k], Counts: c}
		if c.Lookups > 0 {
			out.Precision = &Interval{Value: float64(c.Hits) / float64(c.Lookups)}
			out.Precision.Lo, out.Precision.Hi = bounds(3*k, out.Precision.Value)
		}
		if turnsAll > 0 {
			out.Saved.Value = c.Saved / turnsAll
			out.Saved.Lo, out.Saved.Hi = bounds(3*k+1, out.Saved.Value)
		}
		if k <= len(servers) {
			ci := &Interval{}
			if turnsAll > 0 {
				ci.Value = c.Ceiling / turnsAll
				ci.Lo, ci.Hi = bounds(3*k+2, ci.Value)
			}
			out.Ceiling = ci
		}
		return out
	}
	r.Total = row(0)
	for k := 1; k <= len(servers); k++ {
		r.Servers = append(r.Servers, row(k))
	}
	for k := len(servers) + 1; k < nrows; k++ {
		r.Sites = append(r.Sites, row(k))
	}
	if r.Servers == nil {
		r.Servers = []Row{}
	}
	if r.Sites == nil {
		r.Sites = []Row{}
	}
	return r
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
