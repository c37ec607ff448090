package evaluate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/hoist-mcp/hoist/earned"
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
// the sessions that could be scored, with wᵢ the session's importance
// weight Πₜ π_e(aₜ|xₜ)/pₜ over all its decisions.
type Diagnostics struct {
	// N is the number of sessions, Decisions of decisions in them.
	N         int `json:"n"`
	Decisions int `json:"decisions"`
	// ESS is (Σw)²/Σw², ESSShare ESS/N.
	ESS      Num `json:"ess"`
	ESSShare Num `json:"ess_share"`
	// Support is the number of sessions with w > 0.
	Support int `json:"support"`
	// MaxWeight is max w, MaxShare max w / Σw, MeanWeight mean w (about 1
	// when the propensities are right and the rule is supported).
	MaxWeight  Num `json:"max_weight"`
	MaxShare   Num `json:"max_share"`
	MeanWeight Num `json:"mean_weight"`
	// Clipped is the number of sessions whose weight went above λ at some
	// decision, ClippedShare Clipped/N.
	Clipped      int `json:"clipped"`
	ClippedShare Num `json:"clipped_share"`
	// MinPropensity is the least logged propensity among the decisions
	// made while the weight was still positive.
	MinPropensity Num `json:"min_propensity"`
	// Unevaluable counts decisions that cannot be evaluated: those where the
	// rule gives a positive probability to an action the logging rule
	// could not take (no support, docs/ope.md §1), plus the decisions of
	// sessions that could not be scored at all (Report.Unusable).
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
	// Served is set when some of the rule's rewards are served lookups'
	// estimates (package earned): how many, and IPS with each at its
	// lower and at its upper bound.
	Served *ServedValue `json:"served,omitempty"`
	// Warnings say why a number should not be trusted (docs/ope.md §7).
	Warnings []string `json:"warnings"`
}

// ServedValue says which of a rule's figures rest on served lookups'
// estimates: Decisions counts the lookups of served sessions scored by
// earned's estimate, and IPS is the rule's IPS estimate with the estimate
// and with each of those rewards at its lower and upper bound (what the
// served log shows: docs/audit.md, "Served sessions").
type ServedValue struct {
	Decisions int    `json:"decisions"`
	IPS       Bounds `json:"ips"`
}

// Bounds are an estimate with its lower and upper bound (earned.Bounds).
type Bounds = earned.Bounds

// Logged describes the logged data and what the logging rule earned.
type Logged struct {
	Rules []LoggedRule `json:"rules"`
	// Lookups taken, Hits among them: a lookup of a served session counts
	// the estimate of what it earned (package earned), and the sum is
	// rounded.
	Lookups int `json:"lookups"`
	Hits    int `json:"hits"`
	// Value is the mean reward of a session as logged (exploration
	// included), with its interval: the on-policy value of the logging
	// rule.
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
	// Served is what the proxy's own lookups earned in the sessions that
	// served the flow (package earned, as hoist audit and the console
	// judge them); nil when none did. Hits and Value above, and the rules'
	// estimates, score a served lookup by the same estimate.
	Served *ServedLookups `json:"served,omitempty"`
}

// ServedLookups is what the proxy's lookups earned in served sessions:
// counts, and estimates with their bounds.
type ServedLookups struct {
	Sessions int           `json:"sessions"`
	Lookups  int           `json:"lookups"`
	Hits     earned.Bounds `json:"hits"`
	Saved    earned.Bounds `json:"saved_turns"`
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
	// Unusable counts the decisions of sessions left out because one of
	// their runs could not be scored: the run's site call is not among the
	// episode's calls, or a logged propensity is not in (0, 1].
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
// target rule: the expected reward of a session under it, in saved LLM
// turns.
//
// A session's decisions t = 0…T−1, in the order they were made (runs in
// the order of their calls' results, then each run's decisions), have
// logged actions aₜ, logged propensities pₜ and rewards rₜ; the rule gives
// π_e; Wₜ = Π_{s<t} π_e(aₛ|xₛ)/pₛ is the weight of the first t decisions
// (W₀ = 1), the session's weight w = W_T and its reward R = Σₜ rₜ. The
// reward of decision t is settled after decision σ(t) ≥ t: t itself in
// shadow, where nothing the flow decides reaches the agent; for a lookup
// the served episode holds, the session's last decision (what it earned
// rests on all the agent did later); else, when served, the last decision
// made before the matching call's turn closed (a hit) or before the next
// write or the end (a detour), since the agent's calls in between may
// depend on what later decisions looked up. Over n sessions:
//
//	IPS   = (1/n) Σ_sessions Σₜ W_{σ(t)+1} rₜ
//	SNIPS = Σ_sessions w·R / Σ_sessions w
//	DR    = (1/n) Σ_sessions Σₜ [ W_{σ(t)+1} rₜ − W_{t+1} q̂(xₜ,aₜ) + Wₜ v̂(xₜ) ]
//
// where v̂(x) = Σₐ π_e(a|x) q̂(x,a) and q̂ is the cross-fitted hit-rate
// model of fitModel. Each is unbiased (SNIPS consistent) when the
// propensities are right and the rule is supported, however a session's
// decisions depend on one another (docs/evaluate.md, "Why the session";
// issue 18, point 1): W_{σ(t)+1} is the likelihood ratio of everything
// that happened before rₜ was known. DR's correction terms have mean zero
// for any q̂, and with q̂ ≡ 0 it is IPS. The clipped estimators replace
// every W by min(W, λ). Intervals are the BCa bootstrap over sessions,
// each replicate recomputing every estimator (stats.BootstrapBCa, whose
// jackknife leaves one session out of the totals); the estimates are kept
// as per-session sums so that a replicate costs one pass over the
// resampled sessions.
//
// Runs are matched to the agent's calls they ran after in the order the
// calls' results arrived, by tool; in shadow mode every result has its run,
// so the match is exact. Sessions are estimated in the order of their ids,
// so the report does not depend on the order src gives them in.
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
	if opt.Targets == nil {
		opt.Targets = withLogged(DefaultTargets(), pr.rules)
	}
	return estimate(pr, opt), nil
}

// sessionWeights is what one session contributes to each estimator under
// one rule.
type sessionWeights struct {
	w, wMax float64 // final weight, largest cumulative weight
	r       float64 // Σ r
	// ips, ipsClip, dr and drClip are the session's terms of IPS and DR,
	// plain and clipped.
	ips, ipsClip float64
	dr, drClip   float64
	// ipsLo and ipsHi are its IPS term with each served lookup's reward
	// at its lower and upper bound; served counts its served decisions.
	ipsLo, ipsHi float64
	served       int
	clipped      bool
	minP         float64
	noSupport    int
}

// weigher weighs sessions under one rule, reusing its buffer of weights.
type weigher struct {
	t      Target
	lambda float64
	W      []float64
}

// weigh computes session u's terms: with W[g] the product of the ratios of
// its first g decisions (W[0] = 1), decision g (counted from 0) of reward r
// settled after decision s ≥ g contributes W[s+1]·r to IPS and
// W[s+1]·r − W[g+1]·q̂(a) + W[g]·v̂ to DR.
func (wr *weigher) weigh(u *unit) sessionWeights {
	out := sessionWeights{minP: math.Inf(1)}
	if cap(wr.W) < u.steps+1 {
		wr.W = make([]float64, u.steps+1)
	}
	W := wr.W[:u.steps+1]
	W[0] = 1
	v := make([]float64, 0, 8)
	g := 0
	for ri := range u.runs {
		for si := range u.runs[ri].steps {
			st := &u.runs[ri].steps[si]
			pe := wr.t.probs(st.offers, st.logged)
			for a, x := range pe {
				if x > 0 && st.pb[a] == 0 {
					out.noSupport++
					break
				}
			}
			W[g+1] = W[g] * pe[st.taken] / st.p
			if W[g] > 0 {
				out.minP = math.Min(out.minP, st.p)
			}
			var vg float64
			for a, x := range pe {
				vg += x * st.q[a]
			}
			v = append(v, vg)
			g++
		}
	}
	lambda := wr.lambda
	g = 0
	for ri := range u.runs {
		for si := range u.runs[ri].steps {
			st := &u.runs[ri].steps[si]
			out.r += st.r
			ws, wt, wp := W[st.settle+1], W[g+1], W[g]
			out.wMax = math.Max(out.wMax, wt)
			if ws > lambda || wt > lambda {
				out.clipped = true
			}
			q := st.q[st.taken]
			out.ips += ws * st.r
			out.ipsLo += ws * st.rLo
			out.ipsHi += ws * st.rHi
			if st.served {
				out.served++
			}
			out.ipsClip += math.Min(ws, lambda) * st.r
			out.dr += ws*st.r - wt*q + wp*v[g]
			out.drClip += math.Min(ws, lambda)*st.r - math.Min(wt, lambda)*q + math.Min(wp, lambda)*v[g]
			g++
		}
	}
	out.w = W[u.steps]
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

	// rows[u] is session u's terms, laid out as [1, Σr, then for each rule
	// t its nMetrics numerators, then for each rule its weight w]; a
	// resample's totals have the same layout. SNIPS divides by Σw, the
	// others by the number of sessions.
	nu, nt := len(pr.units), len(targets)
	stride := 2 + nt*(nMetrics+1)
	rows := make([]float64, nu*stride)
	all := make([][]sessionWeights, nt)
	wgh := make([]weigher, nt)
	for ti, t := range targets {
		wgh[ti] = weigher{t: t, lambda: lambda}
	}
	for ui := range pr.units {
		u := &pr.units[ui]
		row := rows[ui*stride : (ui+1)*stride]
		row[0] = 1
		for ri := range u.runs {
			for _, st := range u.runs[ri].steps {
				row[1] += st.r
			}
		}
		for ti := range targets {
			sw := wgh[ti].weigh(u)
			all[ti] = append(all[ti], sw)
			s := row[2+ti*nMetrics : 2+(ti+1)*nMetrics]
			s[0], s[1], s[2], s[3], s[4] = sw.ips, sw.ipsClip, sw.w*sw.r, sw.dr, sw.drClip
			row[2+nt*nMetrics+ti] = sw.w
		}
	}
	k := nt*nMetrics + 1
	finish := func(tot, out []float64) {
		N := tot[0]
		for ti := range nt {
			ws := tot[2+nt*nMetrics+ti]
			for m := range nMetrics {
				j := ti*nMetrics + m
				switch {
				case m == 2:
					if ws > 0 {
						out[j] = tot[2+j] / ws
					} else {
						out[j] = math.NaN()
					}
				case N > 0:
					out[j] = tot[2+j] / N
				default:
					out[j] = math.NaN()
				}
			}
		}
		if N > 0 {
			out[k-1] = tot[1] / N
		} else {
			out[k-1] = math.NaN()
		}
	}
	total := make([]float64, stride)
	for ui := range nu {
		for j, x := range rows[ui*stride : (ui+1)*stride] {
			total[j] += x
		}
	}
	tot := make([]float64, stride)
	values := func(idx []int, out []float64) {
		clear(tot)
		for _, u := range idx {
			for j, x := range rows[u*stride : (u+1)*stride] {
				tot[j] += x
			}
		}
		finish(tot, out)
	}
	jack := func(i int, out []float64) {
		for j, x := range rows[i*stride : (i+1)*stride] {
			tot[j] = total[j] - x
		}
		finish(tot, out)
	}
	point := make([]float64, k)
	finish(total, point)
	rng := rand.New(rand.NewPCG(opt.Seed, 0x686f697374)) // "hoist"
	lo, hi := stats.BootstrapBCa(nu, reps, level, k, values, jack, rng)
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
		var sv ServedValue
		for _, sw := range all[ti] {
			sv.Decisions += sw.served
			sv.IPS.Add(Bounds{Lo: sw.ipsLo, Est: sw.ips, Hi: sw.ipsHi})
		}
		if sv.Decisions > 0 && nu > 0 {
			n := float64(nu)
			sv.IPS = Bounds{Lo: sv.IPS.Lo / n, Est: sv.IPS.Est / n, Hi: sv.IPS.Hi / n}
			res.Served = &sv
		}
		res.Diagnostics = diagnose(all[ti], lambda, pr)
		res.Warnings = warnings(res.Diagnostics)
		rep.Results = append(rep.Results, res)
	}
	return rep
}

func diagnose(rws []sessionWeights, lambda float64, pr *prepared) Diagnostics {
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
		d.Decisions += u.steps
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
		out = append(out, "no support: no logged session took what this rule takes")
	case float64(d.ESS) < 30:
		out = append(out, fmt.Sprintf("effective sample size %.1f is below 30", float64(d.ESS)))
	case float64(d.ESSShare) < 0.01:
		out = append(out, fmt.Sprintf("effective sample size is %.2f%% of n", 100*float64(d.ESSShare)))
	}
	if float64(d.MaxShare) > 0.2 {
		out = append(out, fmt.Sprintf("one session carries %.0f%% of the weight", 100*float64(d.MaxShare)))
	}
	if d.NoSupport > 0 {
		out = append(out, fmt.Sprintf("%d decisions give weight to actions the logging rule could not take", d.NoSupport))
	}
	// The mean weight is 1 in expectation when the propensities are right
	// and the logs could take what the rule takes (docs/ope.md §7); far
	// from 1, the estimates are not to be trusted (issue 24, item 3).
	if mw := float64(d.MeanWeight); d.Support > 0 && (mw < MeanWeightLow || mw > 1/MeanWeightLow) {
		out = append(out, fmt.Sprintf("mean importance weight %.3f is far from 1: the logs rarely explored what this rule does, or their propensities are wrong", mw))
	}
	return out
}

// MeanWeightLow is how far below 1 (or above its inverse) a rule's mean
// importance weight may be before evaluate warns of it.
const MeanWeightLow = 0.5

func logged(pr *prepared) Logged {
	l := Logged{Lookups: pr.lookups, Hits: earned.Round(pr.hits), Shadow: pr.shadow, Mismatch: pr.mismatch, MinPropensity: Num(math.NaN()), Served: pr.served}
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

// withLogged adds to targets each rule the decisions were logged under,
// without its exploration, when it is not among them.
func withLogged(targets []Target, logged map[flow.Rule]int) []Target {
	have := map[flow.Rule]bool{}
	for _, t := range targets {
		if !t.Never {
			have[t.Rule] = true
		}
	}
	var add []flow.Rule
	for r := range logged {
		r.Epsilon = 0
		if r.Decider == "" {
			r.Decider = flow.Reach
		}
		if !have[r] {
			have[r] = true
			add = append(add, r)
		}
	}
	slices.SortFunc(add, func(a, b flow.Rule) int {
		if c := strings.Compare(string(a.Decider), string(b.Decider)); c != 0 {
			return c
		}
		return cmp.Compare(a.Threshold, b.Threshold)
	})
	for _, r := range add {
		targets = append(targets, NewTarget(r))
	}
	return targets
}
