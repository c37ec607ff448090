package stats_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/hoist-mcp/hoist/stats"
)

func ExampleBootstrap() {
	// Hits per session; the statistic is the hit rate over the resampled
	// sessions (a ratio, recomputed on each replicate).
	hits := []float64{3, 0, 2, 5, 1, 4}
	tries := []float64{4, 2, 3, 5, 2, 6}
	rate := func(idx []int) float64 {
		var h, n float64
		for _, i := range idx {
			h += hits[i]
			n += tries[i]
		}
		return h / n
	}
	rng := rand.New(rand.NewPCG(1, 1))
	lo, hi := stats.Bootstrap(len(hits), 2000, 0.95, rate, rng)
	all := []int{0, 1, 2, 3, 4, 5}
	fmt.Printf("rate %.2f, 95%% interval within [0, 1]: %v, ordered: %v\n",
		rate(all), lo >= 0 && hi <= 1, lo < rate(all) && rate(all) < hi)
	// Output: rate 0.68, 95% interval within [0, 1]: true, ordered: true
}

func ExampleWilson() {
	lo, hi := stats.Wilson(8, 10, 0.95)
	fmt.Printf("[%.3f, %.3f]\n", lo, hi)
	// Output: [0.490, 0.943]
}

func ExampleTwoProportionZ() {
	z, p := stats.TwoProportionZ(45, 100, 30, 100)
	fmt.Printf("z = %.3f, p = %.4f\n", z, p)
	// Output: z = 2.191, p = 0.0285
}

func ExampleIPS() {
	// Two decisions where the target agrees with the logged action
	// (propensities 0.5 and 0.25), two where it does not.
	w := []float64{1 / 0.5, 0, 1 / 0.25, 0}
	r := []float64{1, 5, 0.5, 1}
	fmt.Printf("%.2f\n", stats.IPS(w, r))
	// Output: 1.00
}

func ExampleSNIPS() {
	w := []float64{2, 0, 4, 0}
	r := []float64{1, 5, 0.5, 1}
	fmt.Printf("%.3f\n", stats.SNIPS(w, r))
	// Output: 0.667
}

func ExampleDR() {
	w := []float64{2, 0, 4, 0}
	r := []float64{1, 5, 0.5, 1}
	qTarget := []float64{0.6, 0.6, 0.6, 0.6} // q̂(x, π_e)
	qLogged := []float64{0.6, 0.9, 0.6, 0.9} // q̂(x, a_logged)
	fmt.Printf("%.3f\n", stats.DR(w, r, qTarget, qLogged))
	// Output: 0.700
}

func ExampleESS() {
	fmt.Printf("%.2f\n", stats.ESS([]float64{2, 2, 0, 0, 4}))
	// Output: 2.67
}

func ExampleClip() {
	w := []float64{1, 12, 3, 40}
	n := stats.Clip(w, w, 10)
	fmt.Println(w, n)
	// Output: [1 10 3 10] 2
}

func ExampleEpsilonGreedy() {
	// docs/ope.md §6: k = 4, ε = 0.2, uniform exploration.
	fmt.Printf("%.2f %.2f\n", stats.EpsilonGreedy(true, 0.2, 0.25), stats.EpsilonGreedy(false, 0.2, 0.25))
	// Output: 0.85 0.05
}

func ExampleBootstrapVec() {
	// The mean and the maximum of the same resamples.
	x := []float64{2, 4, 4, 5, 7, 9}
	rng := rand.New(rand.NewPCG(1, 1))
	lo, hi := stats.BootstrapVec(len(x), 2000, 0.95, 2, func(idx []int, out []float64) {
		var s, m float64
		for _, i := range idx {
			s += x[i]
			m = max(m, x[i])
		}
		out[0], out[1] = s/float64(len(idx)), m
	}, rng)
	fmt.Printf("mean in [%.1f, %.1f] ∋ 5.2: %v; max ≤ 9: %v\n", lo[0], hi[0], lo[0] < 5.2 && 5.2 < hi[0], hi[1] <= 9)
	// Output: mean in [3.5, 7.2] ∋ 5.2: true; max ≤ 9: true
}

func ExampleBettingLower() {
	// Per-session values of a site: a saved turn, or a detour costing
	// 0.25. The bound may be read again after every session.
	x := []float64{1, -0.25, 1, 1, -0.25, 1, -0.25, 1, 1, 1, -0.25, 1, 1, 1, 1, -0.25, 1, 1, 1, 1}
	fmt.Printf("after 10: %.3f; after 20: %.3f\n", stats.BettingLower(x[:10], -0.25, 0.05), stats.BettingLower(x, -0.25, 0.05))
	// Output: after 10: 0.086; after 20: 0.294
}

func ExampleMeanLower() {
	fmt.Printf("%.3f\n", stats.MeanLower([]float64{1, -0.25, 1, 1, -0.25}, 0.95))
	// Output: -0.004
}
