package stats

import (
	"math"
	"math/rand/v2"
	"sort"
)

// NormalQuantile returns the quantile z of the standard normal distribution
// at probability p, the z with Φ(z) = p:
//
//	z = √2 · erf⁻¹(2p − 1)
//
// It returns -Inf at p = 0, +Inf at p = 1 and NaN outside [0, 1].
func NormalQuantile(p float64) float64 {
	if p < 0 || p > 1 || math.IsNaN(p) {
		return math.NaN()
	}
	return math.Sqrt2 * math.Erfinv(2*p-1)
}

// NormalCDF returns Φ(z), the standard normal distribution function:
//
//	Φ(z) = ½ · erfc(−z/√2)
func NormalCDF(z float64) float64 {
	return 0.5 * math.Erfc(-z/math.Sqrt2)
}

// Quantile returns the p-quantile of sorted (ascending, no NaN) by linear
// interpolation between order statistics (Hyndman & Fan type 7, the
// default of R and NumPy):
//
//	h = (n − 1)·p,  Q(p) = x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋])
//
// It returns NaN for an empty slice or p outside [0, 1].
func Quantile(p float64, sorted []float64) float64 {
	n := len(sorted)
	if n == 0 || p < 0 || p > 1 || math.IsNaN(p) {
		return math.NaN()
	}
	h := float64(n-1) * p
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// Bootstrap returns the percentile bootstrap interval at confidence level
// (e.g. 0.95) of a statistic over n sampling units (Efron & Tibshirani
// 1993; docs/ope.md §8.2).
//
// Each of reps replicates draws n unit indexes uniformly with replacement
// from [0, n) using rng, and evaluates stat on them; stat must compute the
// whole estimator from the units named by idx (so a ratio estimator such as
// SNIPS recomputes its normaliser per replicate, and a unit may be a whole
// session of decisions, the cluster bootstrap). With θ*₁ ≤ … ≤ θ*_B the
// finite replicates in order and α = 1 − level,
//
//	lo = Q(α/2),  hi = Q(1 − α/2)
//
// where Q is [Quantile]. Replicates whose statistic is NaN (e.g. SNIPS on a
// resample with no support) are dropped; if none is left, or n < 1, or
// reps < 1, both bounds are NaN. The idx slice passed to stat is reused
// between calls: stat must not keep it. Use reps ≥ 2000 for 95% intervals.
func Bootstrap(n, reps int, level float64, stat func(idx []int) float64, rng *rand.Rand) (lo, hi float64) {
	l, h := BootstrapVec(n, reps, level, 1, func(idx []int, out []float64) { out[0] = stat(idx) }, rng)
	return l[0], h[0]
}

// BootstrapVec is [Bootstrap] for k statistics computed from the same
// resamples (common random numbers): stat writes the k statistics of the
// units named by idx into out (len k). lo[j] and hi[j] are the percentile
// bounds of statistic j, over its finite replicates, as in Bootstrap:
//
//	lo[j] = Q(α/2 | θ*ⱼ),  hi[j] = Q(1 − α/2 | θ*ⱼ)
//
// Sharing resamples costs one draw of n indexes per replicate whatever k
// is. Neither idx nor out may be kept by stat.
func BootstrapVec(n, reps int, level float64, k int, stat func(idx []int, out []float64), rng *rand.Rand) (lo, hi []float64) {
	lo, hi = nans(k), nans(k)
	if n < 1 || reps < 1 || !(level > 0 && level < 1) {
		return lo, hi
	}
	thetas := replicates(n, reps, k, stat, rng)
	alpha := 1 - level
	for j, th := range thetas {
		if len(th) == 0 {
			continue
		}
		lo[j], hi[j] = Quantile(alpha/2, th), Quantile(1-alpha/2, th)
	}
	return lo, hi
}

// BootstrapBCa is [BootstrapVec] with bias-corrected and accelerated
// percentiles (Efron 1987; Efron & Tibshirani 1993, ch. 14), whose
// coverage error shrinks as 1/n where the plain percentiles' shrinks as
// 1/√n: it corrects for a statistic whose distribution is skewed, as an
// importance-weighted mean is when a few units carry large weights.
// Beside the resamples it needs the jackknife: jack(i, out) writes the k
// statistics of every unit but i (it must not keep out). With θ̂ⱼ the
// statistic of all n units, θ̂ⱼ₍ᵢ₎ the jackknife's and θ̄ⱼ their mean, Φ
// the standard normal distribution function and z_p its quantile
// ([NormalQuantile]):
//
//	z₀ = Φ⁻¹( (#{θ*ⱼ < θ̂ⱼ} + #{θ*ⱼ = θ̂ⱼ}/2) / B )
//	a  = Σᵢ (θ̄ⱼ − θ̂ⱼ₍ᵢ₎)³ / ( 6 · (Σᵢ (θ̄ⱼ − θ̂ⱼ₍ᵢ₎)²)^{3/2} )
//	α₁ = Φ( z₀ + (z₀ + z_{α/2}) / (1 − a(z₀ + z_{α/2})) ),  α₂ the same with z_{1−α/2}
//	lo[j] = Q(α₁ | θ*ⱼ),  hi[j] = Q(α₂ | θ*ⱼ)
//
// With z₀ = a = 0 it is the percentile interval. NaN replicates and
// jackknife values are dropped, as in Bootstrap; a statistic whose
// jackknife values are all equal has a = 0.
func BootstrapBCa(n, reps int, level float64, k int, stat func(idx []int, out []float64), jack func(i int, out []float64), rng *rand.Rand) (lo, hi []float64) {
	lo, hi = nans(k), nans(k)
	if n < 1 || reps < 1 || !(level > 0 && level < 1) {
		return lo, hi
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	point := nans(k)
	stat(all, point)
	thetas := replicates(n, reps, k, stat, rng)
	// The jackknife's mean θ̄, then its sums of (θ̄ − θ₍ᵢ₎)² and ³: two
	// passes over the units.
	out := make([]float64, k)
	each := func(f func(j int, v float64)) {
		for i := range n {
			for j := range out {
				out[j] = math.NaN()
			}
			jack(i, out)
			for j, v := range out {
				if !math.IsNaN(v) {
					f(j, v)
				}
			}
		}
	}
	mean, cnt := make([]float64, k), make([]float64, k)
	each(func(j int, v float64) { mean[j] += v; cnt[j]++ })
	for j := range mean {
		if cnt[j] > 0 {
			mean[j] /= cnt[j]
		}
	}
	s2, s3 := make([]float64, k), make([]float64, k)
	each(func(j int, v float64) {
		d := mean[j] - v
		s2[j] += d * d
		s3[j] += d * d * d
	})
	alpha := 1 - level
	zl, zh := NormalQuantile(alpha/2), NormalQuantile(1-alpha/2)
	for j, th := range thetas {
		if len(th) == 0 || math.IsNaN(point[j]) {
			continue
		}
		below := float64(sort.SearchFloat64s(th, point[j]))
		ties := float64(sort.SearchFloat64s(th, math.Nextafter(point[j], math.Inf(1)))) - below
		z0 := NormalQuantile((below + ties/2) / float64(len(th)))
		a := 0.0
		if s2[j] > 0 {
			a = s3[j] / (6 * math.Pow(s2[j], 1.5))
		}
		adj := func(z float64) float64 {
			if math.IsInf(z0, 0) {
				return NormalCDF(z0)
			}
			d := 1 - a*(z0+z)
			if d <= 0 {
				if z > 0 {
					return 1
				}
				return 0
			}
			return NormalCDF(z0 + (z0+z)/d)
		}
		lo[j], hi[j] = Quantile(adj(zl), th), Quantile(adj(zh), th)
	}
	return lo, hi
}

// replicates draws reps resamples of n units and returns each statistic's
// finite values over them, sorted.
func replicates(n, reps, k int, stat func(idx []int, out []float64), rng *rand.Rand) [][]float64 {
	idx := make([]int, n)
	out := make([]float64, k)
	thetas := make([][]float64, k)
	for j := range thetas {
		thetas[j] = make([]float64, 0, reps)
	}
	for range reps {
		for i := range idx {
			idx[i] = rng.IntN(n)
		}
		for j := range out {
			out[j] = math.NaN()
		}
		stat(idx, out)
		for j, v := range out {
			if !math.IsNaN(v) {
				thetas[j] = append(thetas[j], v)
			}
		}
	}
	for _, th := range thetas {
		sort.Float64s(th)
	}
	return thetas
}

func nans(k int) []float64 {
	x := make([]float64, k)
	for j := range x {
		x[j] = math.NaN()
	}
	return x
}

// Wilson returns the Wilson score interval at confidence level for a
// proportion of k successes in n trials (Wilson 1927). With p̂ = k/n and
// z = [NormalQuantile](1 − α/2), α = 1 − level:
//
//	centre = (p̂ + z²/2n) / (1 + z²/n)
//	half   = z/(1 + z²/n) · √( p̂(1 − p̂)/n + z²/4n² )
//	[lo, hi] = [centre − half, centre + half], clamped to [0, 1]
//
// Unlike the normal (Wald) interval it stays inside [0, 1] and is not
// degenerate at k = 0 or k = n. It returns NaN bounds when n ≤ 0 or k is
// outside [0, n].
func Wilson(k, n int, level float64) (lo, hi float64) {
	if n <= 0 || k < 0 || k > n || !(level > 0 && level < 1) {
		return math.NaN(), math.NaN()
	}
	z := NormalQuantile(1 - (1-level)/2)
	nf := float64(n)
	p := float64(k) / nf
	z2 := z * z
	den := 1 + z2/nf
	centre := (p + z2/(2*nf)) / den
	half := z / den * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	return math.Max(0, centre-half), math.Min(1, centre+half)
}

// TwoProportionZ tests whether two proportions, k1 of n1 and k2 of n2,
// differ (the pooled two-proportion z test). With p̂ᵢ = kᵢ/nᵢ and the
// pooled p̂ = (k1 + k2)/(n1 + n2):
//
//	z = (p̂1 − p̂2) / √( p̂(1 − p̂)(1/n1 + 1/n2) )
//	p = 2·(1 − Φ(|z|))   (two-sided)
//
// When both samples are all successes or all failures the proportions
// cannot differ: z = 0, p = 1. It returns NaN for n1 ≤ 0, n2 ≤ 0 or counts
// outside [0, nᵢ]. The normal approximation wants nᵢp̂ and nᵢ(1 − p̂) of at
// least about 5.
func TwoProportionZ(k1, n1, k2, n2 int) (z, p float64) {
	if n1 <= 0 || n2 <= 0 || k1 < 0 || k1 > n1 || k2 < 0 || k2 > n2 {
		return math.NaN(), math.NaN()
	}
	p1 := float64(k1) / float64(n1)
	p2 := float64(k2) / float64(n2)
	pool := float64(k1+k2) / float64(n1+n2)
	se := math.Sqrt(pool * (1 - pool) * (1/float64(n1) + 1/float64(n2)))
	if se == 0 {
		return 0, 1
	}
	z = (p1 - p2) / se
	return z, 2 * (1 - NormalCDF(math.Abs(z)))
}
