package audit

import (
	"math"
	"math/rand/v2"
	"sort"

	"github.com/hoist-mcp/hoist/earned"
	"github.com/hoist-mcp/hoist/flow"
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
	// Ceiling is the results ceiling as a share of all LLM turns: turns of
	// reads whose every argument value is in an earlier result.
	// CeilingConst adds the flow's constants, CeilingSaid what the customer
	// said. Nil for a site, which has none of its own.
	Ceiling      *Interval `json:"ceiling,omitempty"`
	CeilingConst *Interval `json:"ceiling_const,omitempty"`
	CeilingSaid  *Interval `json:"ceiling_said,omitempty"`
}

// Report is hoist audit's report.
type Report struct {
	Episodes int `json:"episodes"`
	// Tasks counts the distinct tasks of the sessions (flow.TaskKey): a
	// task is served only the counts of the folds that do not hold it.
	Tasks int `json:"tasks"`
	// Served counts the sessions the flow was served in: their lookups are
	// the proxy's own, their hits and turns saved estimates within bounds
	// (Counts.HitBounds, SavedBounds).
	Served    int   `json:"served"`
	Turns     int   `json:"turns"`
	Resamples int   `json:"resamples"`
	Total     Row   `json:"total"`
	Servers   []Row `json:"servers"`
	Sites     []Row `json:"sites"`
	// Reaches names the ceiling a flow can reach in these sessions:
	// "conversation" when they logged it (--context), else "constants". A
	// flow's bindings read results, constants and, with the conversation,
	// what the customer said, so its share saved is at most that ceiling.
	Reaches string `json:"reaches"`
	// Calibration is the decider's reliability table (--calibration).
	Calibration *Calibration `json:"calibration,omitempty"`
}

// Calibration is a reliability table: every offer the decider scored
// (once per run), binned by its probability, against the share of them the
// agent made itself before its next write, and the expected calibration
// error.
type Calibration struct {
	Decider flow.Decider `json:"decider"`
	Offers  int          `json:"offers"`
	Bins    []flow.Bin   `json:"bins"`
	ECE     float64      `json:"ece"`
}

// Calibrate returns the reliability table of decider d's scores ps and
// outcomes hits.
func Calibrate(d flow.Decider, ps []float64, hits []bool) *Calibration {
	bins, ece := flow.Reliability(ps, hits)
	return &Calibration{Decider: d, Offers: len(ps), Bins: bins, ECE: ece}
}

// entry is one nonzero count of one episode in one row.
type entry struct {
	row           int
	lookups, hits float64
	saved         float64
	ceil          [3]float64 // results, constants, conversation
}

// perRow is how many statistics each row bootstraps: precision, saved and
// the three ceilings.
const perRow = 5

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
	r := &Report{Episodes: len(eps), Resamples: b, Total: Row{Name: "total"}, Reaches: "constants"}
	for _, e := range eps {
		if e.Said {
			r.Reaches = "conversation"
		}
	}
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
		sparse[i] = append(sparse[i], entry{row, float64(c.Lookups), c.HitBounds.Est, c.Saved, [3]float64{c.Ceiling, c.CeilingConst, c.CeilingSaid}})
	}
	for i, e := range eps {
		if e.Served {
			r.Served++
		} else {
			e.exactAll() // counts made elsewhere than Walk (hoist replay's live ones) are exact too
		}
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
		lo, hi = stats.BootstrapVec(len(eps), b, 0.95, perRow*nrows, func(idx []int, out []float64) {
			clear(acc)
			t := 0.0
			for _, i := range idx {
				t += turns[i]
				for _, en := range sparse[i] {
					a := &acc[en.row]
					a.lookups += en.lookups
					a.hits += en.hits
					a.saved += en.saved
					for j := range a.ceil {
						a.ceil[j] += en.ceil[j]
					}
				}
			}
			for k, a := range acc {
				if a.lookups > 0 {
					out[perRow*k] = a.hits / a.lookups
				}
				if t > 0 {
					out[perRow*k+1] = a.saved / t
					for j := range a.ceil {
						out[perRow*k+2+j] = a.ceil[j] / t
					}
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
		c.Hits = earned.Round(c.HitBounds.Est)
		c.Detours = c.Lookups - c.Hits
		c.Saved = c.SavedBounds.Est
		out := Row{Name: names[k], Counts: c}
		if c.Lookups > 0 {
			out.Precision = &Interval{Value: c.HitBounds.Est / float64(c.Lookups)}
			out.Precision.Lo, out.Precision.Hi = bounds(perRow*k, out.Precision.Value)
		}
		if turnsAll > 0 {
			out.Saved.Value = c.Saved / turnsAll
			out.Saved.Lo, out.Saved.Hi = bounds(perRow*k+1, out.Saved.Value)
		}
		if k <= len(servers) {
			dst := []**Interval{&out.Ceiling, &out.CeilingConst, &out.CeilingSaid}
			for j, v := range []float64{c.Ceiling, c.CeilingConst, c.CeilingSaid} {
				ci := &Interval{}
				if turnsAll > 0 {
					ci.Value = v / turnsAll
					ci.Lo, ci.Hi = bounds(perRow*k+2+j, ci.Value)
				}
				*dst[j] = ci
			}
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
