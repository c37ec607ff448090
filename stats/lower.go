package stats

import "math"

// MeanLower returns the one-sided lower confidence bound at level of the
// mean of x, from the normal approximation over its n values:
//
//	L = x̄ − z_level · s/√n,   s² = Σ (xᵢ − x̄)² / (n − 1)
//
// It holds for one look at n fixed in advance: computed again as values
// arrive, and acted on the first time it clears a mark, it errs far more
// often than 1 − level (see [BettingLower]). It returns NaN for n < 2 or a
// level outside (0, 1).
func MeanLower(x []float64, level float64) float64 {
	n := len(x)
	if n < 2 || !(level > 0 && level < 1) {
		return math.NaN()
	}
	var s float64
	for _, v := range x {
		s += v
	}
	mean := s / float64(n)
	var ss float64
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	sd := math.Sqrt(ss / float64(n-1))
	return mean - NormalQuantile(level)*sd/math.Sqrt(float64(n))
}

// BettingLower returns the lower bound, after the last value of x, of a
// one-sided confidence sequence for the mean μ of x: a bound L_t after each
// value t such that
//
//	P( μ < L_t for some t ) ≤ α
//
// when the values are independent with mean μ (or each has mean μ given
// those before it) and none is below floor. Because the guarantee holds at
// every t at once, the bound may be computed again after every new value,
// and acted on the first time it clears a mark, without erring more often
// than α (Waudby-Smith & Ramdas, "Estimating means of bounded random
// variables by betting", JRSS B 2024; Howard, Ramdas, McAuliffe & Sekhon,
// Annals of Statistics 2021). Only a floor is needed, no ceiling: the
// bound is one-sided.
//
// It is the confidence sequence of a gambler betting against each mean m:
// the wealth
//
//	K_t(m) = Πᵢ≤t (1 + λᵢ(m)·(xᵢ − m)),   λᵢ(m) = min(λ̃ᵢ, c/(m − floor)),  c = ½
//
// is a nonnegative supermartingale when μ ≤ m, so by Ville's inequality it
// reaches 1/α with probability at most α, and
//
//	L_t = sup{ m > floor : K_t(m) ≥ 1/α }
//
// (floor when there is none). The bets are the predictable plug-in
//
//	λ̃ᵢ = √( 2 log(1/α) / (σ̂²ᵢ₋₁ · i · log(1 + i)) ),
//	μ̂ᵢ = Σⱼ≤ᵢ xⱼ / (i + 1),  σ̂²ᵢ = (1 + Σⱼ≤ᵢ (xⱼ − μ̂ⱼ₋₁)²) / (i + 1)
//
// known before xᵢ is: a prior of one value of variance 1 (a saved turn,
// squared), shrunk towards 0. λᵢ(m) does not increase with m and so K_t(m)
// does not either, which makes {m : K_t(m) ≥ 1/α} an interval found by
// bisection. It returns NaN for an empty x, an α outside (0, 1), or a value
// below floor.
func BettingLower(x []float64, floor, alpha float64) float64 {
	if len(x) == 0 || !(alpha > 0 && alpha < 1) || math.IsNaN(floor) || math.IsInf(floor, 0) {
		return math.NaN()
	}
	top := math.Inf(-1)
	for _, v := range x {
		if v < floor || math.IsNaN(v) {
			return math.NaN()
		}
		top = math.Max(top, v)
	}
	bets := make([]float64, len(x))
	var sum, ss float64
	prev := 0.0 // μ̂ᵢ₋₁
	for i, v := range x {
		t := float64(i + 1)
		sigma2 := (1 + ss) / t // σ̂²ᵢ₋₁
		bets[i] = math.Sqrt(2 * math.Log(1/alpha) / (sigma2 * t * math.Log(1+t)))
		ss += (v - prev) * (v - prev)
		sum += v
		prev = sum / (t + 1)
	}
	target := math.Log(1 / alpha)
	logK := func(m float64) float64 {
		limit := 0.5 / (m - floor)
		s := 0.0
		for i, v := range x {
			s += math.Log1p(math.Min(bets[i], limit) * (v - m))
		}
		return s
	}
	lo, hi := floor, top
	if hi <= lo || logK(math.Nextafter(lo, hi)) < target {
		return floor
	}
	for range 40 {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if logK(mid) >= target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}
