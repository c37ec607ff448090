package learn

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
)

// arbiterL2 is the ridge penalty of the arbiter's fit, in offers: enough
// to keep a weight finite when a feature separates its few offers
// perfectly, too little to move a weight that many offers fit.
const arbiterL2 = 1.0

// arbiterRound is how many decimals the arbiter's weights keep in a flow
// file: far below what moves a probability, and the file stays readable.
const arbiterRound = 1e6

// FitArbiter fits f's arbiter on the episodes of src the filter selects:
// each is replayed with flow.ReplayEpisode (served the counts of the folds
// that do not hold its task, so every offer's inputs are held out), and
// every offer scored is labelled by whether the agent made that call
// itself before its next write. A logistic regression of the label on the
// offer's inputs (flow.ArbiterFeatures) is fitted on all offers (Weights)
// and, for each fold, on the other folds' offers (Folds), which serve that
// fold; the fit's ECE and log loss are out of fold. A flow of one fold, or
// one whose replay scores no offer, gets no arbiter. It is ReplayTable
// and Table.Fit in one.
func FitArbiter(ctx context.Context, src episode.Source, filter episode.Filter, f *flow.Flow) error {
	return FitArbiterWith(ctx, src, filter, f, ArbiterOptions{})
}

// ArbiterOptions say what else the arbiter's fit reads.
type ArbiterOptions struct {
	// Oracle, when set, is asked the flow's question about every training
	// offer (within flow.DefaultCaps.Questions per episode, as a session
	// would be), and its answer is fitted as the "oracle" input: hoist
	// learn --oracle. Cached answers make the fit repeatable, and
	// --oracle replay reruns it from the cache alone. An offer without an
	// answer has the input 0, as when serving.
	Oracle flow.Oracle
	// ByAgent counts each lookup's held-out offers by the agent's model
	// too (flow.HeldOut.Agents), so that it is gated by its agent's rate
	// backed off to every agent's. Off by default: on the τ²-bench
	// training tasks it gated more lookups that hit than it spared
	// detours (docs/flow.md, "Held-out hit rates").
	ByAgent bool
}

// FitArbiterWith is FitArbiter with the System-One model's answers as one
// more input, when opt.Oracle is set.
func FitArbiterWith(ctx context.Context, src episode.Source, filter episode.Filter, f *flow.Flow, ao ArbiterOptions) error {
	f.Arbiter = nil // the replay is of the flow's counts alone
	if f.Folds < 2 {
		return nil
	}
	t, err := ReplayTable(ctx, src, filter, f, ao)
	if err != nil {
		return err
	}
	return t.Fit(f)
}

// ReplayTable replays the episodes of src the filter selects with f, as
// FitArbiter does, and returns the training table of their offers.
func ReplayTable(ctx context.Context, src episode.Source, filter episode.Filter, f *flow.Flow, ao ArbiterOptions) (*Table, error) {
	feats := flow.ArbiterFeatures
	if ao.Oracle != nil {
		feats = append(slices.Clone(feats), flow.FeatureOracle)
	}
	t := newTable(f, feats)
	var once flow.OfferOnce
	var fold int
	var agent string
	var x []float64
	opt := flow.ReplayOptions{
		Rule: flow.Rule{Decider: flow.Reach, Threshold: flow.DefaultThreshold},
		Caps: flow.DefaultCaps,
		Decision: func(d *flow.Decision, hit []bool) {
			once.Each(d, hit, func(o *flow.Offer, hit bool) {
				x = flow.InputsOf(o).Vector(feats, x)
				t.add(fold, hit, x)
				t.addRate(rateKey{site: o.From, lookup: o.Tool, binding: flow.OfferBinding(o.Binding), agent: agent, fold: fold}, hit)
			})
		},
		Oracle:    ao.Oracle,
		AskAlways: ao.Oracle != nil,
		Context:   ctx,
	}
	if f.Learned.Rest {
		// The held-out hit rate of each fan-out's rest, had the fan-out
		// waited for the agent's first read (flow's Session.defers): not a
		// row, since it is not an offer this replay made.
		opt.Rest = func(o *flow.Offer, hit bool) {
			t.addRate(rateKey{site: o.From, lookup: o.Tool, binding: flow.OfferBinding(o.Binding), agent: agent, fold: fold}, hit)
		}
	}
	err := src.Episodes(ctx, filter, func(ep *episode.Episode) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		fold = flow.FoldOf(flow.TaskKey(ep), f.Folds)
		if ao.ByAgent {
			agent = ep.AgentModel
		}
		flow.ReplayEpisode(f, ep, opt)
		t.episodes++
		flow.AddDigest(&t.digest, episodeDigest(ep))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading episodes: %w", err)
	}
	return t, nil
}

// Fit fits f's arbiter on the table (FitArbiter), which must be of f's
// episodes, replayed with f. The rows are read in their canonical order
// (Table), so the weights do not depend on how the episodes were split.
func (t *Table) Fit(f *flow.Flow) error {
	f.Arbiter = nil
	if f.Folds < 2 {
		return nil
	}
	rows := t.sorted()
	if len(rows) == 0 {
		return nil
	}
	feats := t.features
	a := &flow.Arbiter{Features: feats, Weights: fitLogistic(rows, -1, len(feats))}
	for k := 0; k < f.Folds; k++ {
		a.Folds = append(a.Folds, fitLogistic(rows, k, len(feats)))
	}
	// Out of fold: each offer predicted by the weights fitted without it.
	var ps []float64
	var hits []bool
	loss := 0.0
	for _, r := range rows {
		p := sigmoidDot(a.Folds[r.fold], r.x)
		q := min(max(p, 1e-12), 1-1e-12)
		l := -math.Log(1 - q)
		if r.hit {
			l = -math.Log(q)
			a.Fit.Hits += r.n
		}
		loss += float64(r.n) * l
		a.Fit.Offers += r.n
		for range r.n {
			ps, hits = append(ps, p), append(hits, r.hit)
		}
	}
	_, ece := flow.Reliability(ps, hits)
	a.Fit.ECE = math.Round(ece*arbiterRound) / arbiterRound
	a.Fit.ECEBand = math.Round(flow.BandECE(ps, hits, 0.2, 0.5)*arbiterRound) / arbiterRound
	a.Fit.LogLoss = math.Round(loss/float64(a.Fit.Offers)*arbiterRound) / arbiterRound
	f.Arbiter = a
	t.heldOut(f)
	return f.Validate()
}

func sigmoidDot(w, x []float64) float64 {
	z := 0.0
	for i := range x {
		z += w[i] * x[i]
	}
	return flow.Sigmoid(z)
}

// fitLogistic fits a ridge logistic regression by Newton's method on the
// rows not of fold skip (each weighing as many offers as it stands for) (all of them when skip < 0), and returns the
// weights, rounded.
func fitLogistic(rows []tableRow, skip, d int) []float64 {
	w := make([]float64, d)
	g := make([]float64, d)
	h := make([][]float64, d)
	for i := range h {
		h[i] = make([]float64, d+1)
	}
	for iter := 0; iter < 50; iter++ {
		for i := range g {
			g[i] = arbiterL2 * w[i]
			clear(h[i])
			h[i][i] = arbiterL2
		}
		for _, r := range rows {
			if r.fold == skip {
				continue
			}
			p := sigmoidDot(w, r.x)
			y := 0.0
			if r.hit {
				y = 1
			}
			n := float64(r.n)
			e, s := n*(p-y), n*p*(1-p)
			for i, xi := range r.x {
				if xi == 0 {
					continue
				}
				g[i] += e * xi
				for j, xj := range r.x {
					h[i][j] += s * xi * xj
				}
			}
		}
		for i := range g {
			h[i][d] = g[i]
		}
		step := solve(h)
		moved := 0.0
		for i := range w {
			w[i] -= step[i]
			moved = max(moved, math.Abs(step[i]))
		}
		if moved < 1e-9 {
			break
		}
	}
	for i := range w {
		w[i] = math.Round(w[i]*arbiterRound) / arbiterRound
	}
	return w
}

// solve solves the augmented system m (d rows of d+1) by Gaussian
// elimination with partial pivoting; m is overwritten. The ridge makes it
// positive definite, so a pivot is never 0.
func solve(m [][]float64) []float64 {
	d := len(m)
	for c := 0; c < d; c++ {
		p := c
		for r := c + 1; r < d; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[p][c]) {
				p = r
			}
		}
		m[c], m[p] = m[p], m[c]
		for r := c + 1; r < d; r++ {
			k := m[r][c] / m[c][c]
			for j := c; j <= d; j++ {
				m[r][j] -= k * m[c][j]
			}
		}
	}
	x := make([]float64, d)
	for r := d - 1; r >= 0; r-- {
		s := m[r][d]
		for j := r + 1; j < d; j++ {
			s -= m[r][j] * x[j]
		}
		x[r] = s / m[r][r]
	}
	return x
}
