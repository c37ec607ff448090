package evaluate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/stats"
)

// Defaults of Options.
const (
	DefaultClip       = 50
	DefaultLevel      = 0.95
	DefaultReps       = 2000
	DefaultDetourCost = flow.DefaultThreshold
)

// Options say what to estimate and how.
type Options struct {
	// Targets are the rules to estimate; nil means DefaultTargets.
	Targets []Target
	Reward  Reward
	// Clip is λ, the cap of the clipped estimates' weights (docs/ope.md §4,
	// the weight cap); +Inf clips nothing.
	Clip float64
	// Level is the intervals' confidence level, Reps the bootstrap's
	// replicates and Seed its random source's seed.
	Level float64
	Reps  int
	Seed  uint64
}

// The estimators, in the order Result.Estimates lists them.
const (
	IPS      = "IPS"
	IPSClip  = "IPS clipped"
	SNIPS    = "SNIPS"
	DR       = "DR"
	DRClip   = "DR clipped"
	nMetrics = 5
)

var estimatorNames = [nMetrics]string{IPS, IPSClip, SNIPS, DR, DRClip}

// Num is a number that writes NaN and ±Inf as JSON null.
type Num float64

// MarshalJSON writes the number, or null when it is not finite.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', 10, 64), nil
}

// Estimate is one estimator's value of a rule and its bootstrap interval.
type Estimate struct {
	Estimator string `json:"estimator"`
	// Clip is the weight cap λ of a clipped estimator, null otherwise.
	Clip  Num `json:"clip"`
	Value Num `json:"value"`
	Lo    Num `json:"lo"`
	Hi    Num `json:"hi"`
}

// Diagnostics are the weights' health for one rule (docs/ope.md §7), over
// the runs that could be scored, with wᵢ the run's importance weight
// Πₜ π_e(aₜ|xₜ)/pₜ.
type Diagnostics struct {
	// N is the number of runs, Decisions of decisions in them.
	N         int `json:"n"`
	Decisions int `json:"decisions"`
	// ESS is (Σw)²/Σw², ESSShare ESS/N.
	ESS      Num `json:"ess"`
	ESSShare Num `json:"ess_share"`
	// Support is the number of runs with w > 0.
	Support int `json:"support"`
	// MaxWeight is max w, MaxShare max w / Σw, MeanWeight mean w (about 1
	// when the propensities are right and the rule is supported).
	MaxWeight  Num `json:"max_weight"`
	MaxShare   Num `json:"max_share"`
	MeanWeight Num `json:"mean_weight"`
	// Clipped is the number of runs whose weight went above λ at some
	// decision, ClippedShare Clipped/N.
	Clipped      int `json:"clipped"`
	ClippedShare Num `json:"clipped_share"`
	// MinPropensity is the least logged propensity among the decisions of
	// runs with w > 0.
	MinPropensity Num `json:"min_propensity"`
	// Unevaluable counts decisions that cannot be evaluated: those where the
	// rule gives a positive probability to an action the logging rule
	// could not take (no support, docs/ope.md §1), plus the decisions of
	// runs that could not be scored at all (Report.Unusable).
	Unevaluable int `json:"unevaluable"`
	NoSupport   int `json:"no_support"`
}

// Result is the estimates of one rule.
type Result struct {
	Rule      string     `json:"rule"`
	Decider   string     `json:"decider,omitempty"`
	Threshold Num        `json:"threshold"`
	Epsilon   Num        `json:"epsilon"`
	Estimates []Estimate `json:"estimates"`
	Diagnostics
	// Warnings say why a number should not be trusted (docs/ope.md §7).
	Warnings []string `json:"warnings"`
}

// Logged describes the logged data and what the logging rule earned.
type Logged struct {
	Rules []LoggedRule `json:"rules"`
	// Lookups taken, Hits among them.
	Lookups int `json:"lookups"`
	Hits    int `json:"hits"`
	// Value is the mean reward of a run as logged (exploration included),
	// with its interval: the on-policy value of the logging rule.
	Value Num `json:"value"`
	Lo    Num `json:"lo"`
	Hi    Num `json:"hi"`
	// MinPropensity is the least logged propensity.
	MinPropensity Num `json:"min_propensity"`
	// Shadow counts decisions made in shadow mode.
	Shadow int `json:"shadow"`
	// Mismatch counts decisions whose logged propensity is not the one
	// the logged rule gives its offers (docs/ope.md §6, rule 5).
	Mismatch int `json:"propensity_mismatch"`
}

// LoggedRule is a rule decisions were logged under, and how many.
type LoggedRule struct {
	Decider   string `json:"decider"`
	Threshold Num    `json:"threshold"`
	Epsilon   Num    `json:"epsilon"`
	Decisions int    `json:"decisions"`
}

// Report is what Evaluate found.
type Report struct {
	Sessions  int `json:"sessions"`
	Runs      int `json:"runs"`
	Decisions int `json:"decisions"`
	// Unusable counts decisions of runs that could not be scored: the run's
	// site call is not among the episode's calls, or a logged propensity is
	// not in (0, 1].
	Unusable   int      `json:"unusable"`
	DetourCost Num      `json:"detour_cost"`
	Clip       Num      `json:"clip"`
	Level      Num      `json:"level"`
	Reps       int      `json:"reps"`
	Seed       uint64   `json:"seed"`
	Logged     Logged   `json:"logged"`
	Results    []Result `json:"results"`
}

// ErrNoDecisions is returned when the source holds no logged decision.
var ErrNoDecisions = errors.New("no flow decisions: record sessions with hoist-mcp --flow FLOW --flow-explore EPSILON (and --flow-shadow) first")

// Evaluate reads every session of src and estimates the value of each
// target rule: the expected reward of a run under it.
//
// For run i with decisions t = 1…Tᵢ, logged actions aₜ with logged
// propensities pₜ and rewards rₜ, the rule's probabilities π_e, and
// cumulative weights W_{1:t} = Π_{s≤t} π_e(aₛ|xₛ)/pₛ (W_{1:0} = 1),
// wᵢ = W_{1:Tᵢ} and Rᵢ = Σₜ rₜ:
//
//	IPS   = (1/n) Σᵢ wᵢ Rᵢ                         (stats.IPS)
//	SNIPS = Σᵢ wᵢ Rᵢ / Σᵢ wᵢ                      (stats.SNIPS)
//	DR    = (1/n) Σᵢ Σₜ [ W_{1:t}(rₜ − q̂(xₜ,aₜ)) + W_{1:t−1} v̂(xₜ) ]
//
// where v̂(x) = Σₐ π_e(a|x) q̂(x,a) and q̂ is the cross-fitted hit-rate
// model of fitModel. DR is the step-wise doubly robust estimator (Jiang &
// Li 2016; Thomas & Brunskill 2016): unbiased for any q̂ when the
// propensities are right, and it reduces to per-decision IPS when q̂ ≡ 0.
// The clipped estimators replace every W by min(W, λ). Intervals are the
// percentile bootstrap over sessions, each replicate recomputing every
// estimator (stats.BootstrapVec).
func Evaluate(ctx context.Context, src Source, opt Options) (*Report, error) {
	var sessions []Session
	if err := src.Sessions(ctx, func(s Session) error {
		sessions = append(sessions, s)
		return nil
	}); err != nil {
		return nil, err
	}
	pr := prepare(sessions, opt.Reward)
	if pr.decisions == 0 {
		return nil, ErrNoDecisions
	}
	fitModel(pr, opt.Reward)
	return estimate(pr, opt), nil
}

// runWeights is what one run contributes to each estimator under one rule.
type runWeights struct {
	w, wMax    float64 // final weight, largest cumulative weight
	r          float64 // Σ r
	dr, drClip float64
	clipped    bool
	minP       float64
	noSupport  int
}

// weigh computes one run's terms under target t with cap lambda.
func weigh(r *run, t Target, lambda float64) runWeights {
	out := runWeights{minP: math.Inf(1)}
	W, Wc := 1.0, 1.0
	prevW, prevWc := 1.0, 1.0
	for i := range r.steps {
		st := &r.steps[i]
		pe := t.probs(st.offers)
		for a, x := range pe {
			if x > 0 && st.pb[a] == 0 {
				out.noSupport++
				break
			}
		}
		out.r += st.r
		if W == 0 {
			continue
		}
		out.minP = math.Min(out.minP, st.p)
		var v float64
		for a, x := range pe {
			v += x * st.q[a]
		}
		rho := pe[st.taken] / st.p
		W *= rho
		Wc = math.Min(W, lambda)
		if W > lambda {
			out.clipped = true
		}
		out.wMax = math.Max(out.wMax, W)
		res := st.r - st.q[st.taken]
		out.dr += W*res + prevW*v
		out.drClip += Wc*res + prevWc*v
		prevW, prevWc = W, Wc
	}
	out.w = W
	return out
}

func estimate(pr *prepared, opt Options) *Report {
	targets := opt.Targets
	if targets == nil {
		targets = DefaultTargets()
	}
	lambda := opt.Clip
	if lambda <= 0 || math.IsNaN(lambda) {
		lambda = math.Inf(1)
	}
	level := opt.Level
	if !(level > 0 && level < 1) {
		level = DefaultLevel
	}
	reps := opt.Reps
	if reps <= 0 {
		reps = DefaultReps
	}
	rep := &Report{
		Sessions: pr.sessions, Runs: pr.runs, Decisions: pr.decisions, Unusable: pr.unusable,
		DetourCost: Num(opt.Reward.DetourCost), Clip: Num(lambda), Level: Num(level), Reps: reps, Seed: opt.Seed,
	}
	rep.Logged = logged(pr)

	// sums[u][t*nMetrics+m] are unit u's numerators for rule t; the
	// denominators are runs (n[u]) and, for SNIPS, Σw (wsum[u][t]).
	nu, nt := len(pr.units), len(targets)
	n := make([]float64, nu)
	sums := make([][]float64, nu)
	wsum := make([][]float64, nu)
	observed := make([]float64, nu)
	all := make([][]runWeights, nt)
	for ui := range pr.units {
		u := &pr.units[ui]
		n[ui] = float64(len(u.runs))
		sums[ui] = make([]float64, nt*nMetrics)
		wsum[ui] = make([]float64, nt)
		for ri := range u.runs {
			for _, st := range u.runs[ri].steps {
				observed[ui] += st.r
			}
		}
		for ti, t := range targets {
			s := sums[ui][ti*nMetrics : (ti+1)*nMetrics]
			for ri := range u.runs {
				rw := weigh(&u.runs[ri], t, lambda)
				all[ti] = append(all[ti], rw)
				s[0] += rw.w * rw.r
				s[1] += math.Min(rw.w, lambda) * rw.r
				s[2] += rw.w * rw.r
				s[3] += rw.dr
				s[4] += rw.drClip
				wsum[ui][ti] += rw.w
			}
		}
	}
	values := func(idx []int, out []float64) {
		var N, obs float64
		tot := make([]float64, nt*nMetrics)
		ws := make([]float64, nt)
		for _, u := range idx {
			N += n[u]
			obs += observed[u]
			for j, x := range sums[u] {
				tot[j] += x
			}
			for j, x := range wsum[u] {
				ws[j] += x
			}
		}
		for ti := range nt {
			for m := range nMetrics {
				j := ti*nMetrics + m
				switch {
				case m == 2:
					if ws[ti] > 0 {
						out[j] = tot[j] / ws[ti]
					} else {
						out[j] = math.NaN()
					}
				case N > 0:
					out[j] = tot[j] / N
				default:
					out[j] = math.NaN()
				}
			}
		}
		if N > 0 {
			out[nt*nMetrics] = obs / N
		} else {
			out[nt*nMetrics] = math.NaN()
		}
	}
	k := nt*nMetrics + 1
	point := make([]float64, k)
	idx := make([]int, nu)
	for i := range idx {
		idx[i] = i
	}
	values(idx, point)
	rng := rand.New(rand.NewPCG(opt.Seed, 0x686f697374)) // "hoist"
	lo, hi := stats.BootstrapVec(nu, reps, level, k, values, rng)
	rep.Logged.Value, rep.Logged.Lo, rep.Logged.Hi = Num(point[k-1]), Num(lo[k-1]), Num(hi[k-1])

	for ti, t := range targets {
		res := Result{Rule: t.Name, Threshold: Num(math.NaN()), Epsilon: Num(math.NaN())}
		if !t.Never {
			res.Decider, res.Threshold, res.Epsilon = string(t.Rule.Decider), Num(t.Rule.Threshold), Num(t.Rule.Epsilon)
		}
		for m := range nMetrics {
			j := ti*nMetrics + m
			e := Estimate{Estimator: estimatorNames[m], Clip: Num(math.NaN()), Value: Num(point[j]), Lo: Num(lo[j]), Hi: Num(hi[j])}
			if m == 1 || m == 4 {
				e.Clip = Num(lambda)
			}
			res.Estimates = append(res.Estimates, e)
		}
		res.Diagnostics = diagnose(all[ti], lambda, pr)
		res.Warnings = warnings(res.Diagnostics)
		rep.Results = append(rep.Results, res)
	}
	return rep
}

func diagnose(rws []runWeights, lambda float64, pr *prepared) Diagnostics {
	d := Diagnostics{N: len(rws), MinPropensity: Num(math.NaN())}
	w := make([]float64, len(rws))
	var sum, maxW float64
	minP := math.Inf(1)
	for i, rw := range rws {
		w[i] = rw.w
		sum += rw.w
		maxW = math.Max(maxW, rw.w)
		if rw.w > 0 {
			d.Support++
			minP = math.Min(minP, rw.minP)
		}
		if rw.clipped {
			d.Clipped++
		}
		d.NoSupport += rw.noSupport
	}
	for _, u := range pr.units {
		for _, r := range u.runs {
			d.Decisions += len(r.steps)
		}
	}
	d.ESS = Num(stats.ESS(w))
	d.MaxWeight = Num(maxW)
	d.MaxShare, d.MeanWeight, d.ESSShare, d.ClippedShare = Num(math.NaN()), Num(math.NaN()), Num(math.NaN()), Num(math.NaN())
	if sum > 0 {
		d.MaxShare = Num(maxW / sum)
	}
	if n := len(rws); n > 0 {
		d.MeanWeight = Num(sum / float64(n))
		d.ESSShare = Num(float64(d.ESS) / float64(n))
		d.ClippedShare = Num(float64(d.Clipped) / float64(n))
	}
	if !math.IsInf(minP, 1) {
		d.MinPropensity = Num(minP)
	}
	d.Unevaluable = d.NoSupport + pr.unusable
	return d
}

// warnings are docs/ope.md §7's reasons to distrust an estimate.
func warnings(d Diagnostics) []string {
	out := []string{}
	switch {
	case d.Support == 0:
		out = append(out, "no support: no logged run took what this rule takes")
	case float64(d.ESS) < 30:
		out = append(out, fmt.Sprintf("effective sample size %.1f is below 30", float64(d.ESS)))
	case float64(d.ESSShare) < 0.01:
		out = append(out, fmt.Sprintf("effective sample size is %.2f%% of n", 100*float64(d.ESSShare)))
	}
	if float64(d.MaxShare) > 0.2 {
		out = append(out, fmt.Sprintf("one run carries %.0f%% of the weight", 100*float64(d.MaxShare)))
	}
	if d.NoSupport > 0 {
		out = append(out, fmt.Sprintf("%d decisions give weight to actions the logging rule could not take", d.NoSupport))
	}
	return out
}

func logged(pr *prepared) Logged {
	l := Logged{Lookups: pr.lookups, Hits: pr.hits, Shadow: pr.shadow, Mismatch: pr.mismatch, MinPropensity: Num(math.NaN())}
	minP := math.Inf(1)
	for _, u := range pr.units {
		for _, r := range u.runs {
			for _, st := range r.steps {
				minP = math.Min(minP, st.p)
			}
		}
	}
	if !math.IsInf(minP, 1) {
		l.MinPropensity = Num(minP)
	}
	for r, n := range pr.rules {
		l.Rules = append(l.Rules, LoggedRule{Decider: string(r.Decider), Threshold: Num(r.Threshold), Epsilon: Num(r.Epsilon), Decisions: n})
	}
	slices.SortFunc(l.Rules, func(a, b LoggedRule) int { return b.Decisions - a.Decisions })
	return l
}

var _ json.Marshaler = Num(0)
