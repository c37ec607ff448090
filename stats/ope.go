package stats

import "math"

// IPS returns the inverse-propensity-scoring estimate of a target policy's
// value from importance weights w and rewards r of the same length n
// (Horvitz & Thompson 1952; docs/ope.md §2), with wᵢ = π_e(aᵢ|xᵢ)/pᵢ:
//
//	V_IPS = (1/n) Σᵢ wᵢ rᵢ
//
// Rows with wᵢ = 0 add nothing but count in n. It returns NaN for n = 0.
// It panics if the lengths differ.
func IPS(w, r []float64) float64 {
	mustSameLen(len(w), len(r))
	if len(w) == 0 {
		return math.NaN()
	}
	var s float64
	for i := range w {
		s += w[i] * r[i]
	}
	return s / float64(len(w))
}

// SNIPS returns the self-normalised IPS estimate (Swaminathan & Joachims
// 2015; docs/ope.md §3):
//
//	V_SNIPS = Σᵢ wᵢ rᵢ / Σᵢ wᵢ
//
// It lies within [min r, max r]. It is undefined, and returns NaN, when
// Σ w = 0 (no row where the target acted as the logger did: no support).
// It panics if the lengths differ.
func SNIPS(w, r []float64) float64 {
	mustSameLen(len(w), len(r))
	var sw, swr float64
	for i := range w {
		sw += w[i]
		swr += w[i] * r[i]
	}
	if sw == 0 {
		return math.NaN()
	}
	return swr / sw
}

// DR returns the doubly robust estimate (Dudík, Langford & Li 2011;
// docs/ope.md §5) from weights w, rewards r, the reward model's value of the
// target policy qTarget[i] = q̂(xᵢ, π_e) = Σₐ π_e(a|xᵢ) q̂(xᵢ, a), and its
// value of the logged action qLogged[i] = q̂(xᵢ, aᵢ):
//
//	V_DR = (1/n) Σᵢ [ qTargetᵢ + wᵢ (rᵢ − qLoggedᵢ) ]
//
// With q̂ ≡ 0 it is [IPS]; with w ≡ 0 it is the direct method. Clip w
// beforehand ([Clip]) for DR with a weight cap. It returns NaN for n = 0 and
// panics if the lengths differ.
func DR(w, r, qTarget, qLogged []float64) float64 {
	mustSameLen(len(w), len(r))
	mustSameLen(len(w), len(qTarget))
	mustSameLen(len(w), len(qLogged))
	if len(w) == 0 {
		return math.NaN()
	}
	var s float64
	for i := range w {
		s += qTarget[i] + w[i]*(r[i]-qLogged[i])
	}
	return s / float64(len(w))
}

// ESS returns Kong's (1992) effective sample size of importance weights
// (docs/ope.md §7):
//
//	ESS = (Σᵢ wᵢ)² / Σᵢ wᵢ²
//
// It is between 1 and n when some wᵢ > 0, and 0 when every wᵢ is 0. For a
// deterministic target with equal propensities on the matching rows it is
// the number of matches.
func ESS(w []float64) float64 {
	var s, s2 float64
	for _, x := range w {
		s += x
		s2 += x * x
	}
	if s2 == 0 {
		return 0
	}
	return s * s / s2
}

// Clip caps importance weights at lambda, the weight-cap form of clipping
// (OBP's lambda_; Ionides 2008; docs/ope.md §4):
//
//	w̃ᵢ = min(wᵢ, λ)
//
// It writes w̃ into dst (which must have len(w); dst may be w itself) and
// returns the number of weights that were above λ. λ = +Inf leaves the
// weights unchanged. With rewards ≥ 0 clipping biases IPS downward.
func Clip(dst, w []float64, lambda float64) (clipped int) {
	mustSameLen(len(dst), len(w))
	for i, x := range w {
		if x > lambda {
			x = lambda
			clipped++
		}
		dst[i] = x
	}
	return clipped
}

// EpsilonGreedy returns the propensity π(a|x) of an action under
// ε-greedy with exploration distribution q over the k offered actions
// (docs/ope.md §6):
//
//	π(a|x) = (1 − ε)·1[a = g] + ε·q(a)
//
// where isGreedy says whether a is the greedy action g and q is the
// exploration probability of a (1/k for uniform exploration).
func EpsilonGreedy(isGreedy bool, eps, q float64) float64 {
	p := eps * q
	if isGreedy {
		p += 1 - eps
	}
	return p
}

func mustSameLen(a, b int) {
	if a != b {
		panic("stats: slice lengths differ")
	}
}
