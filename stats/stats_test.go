package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

const tol = 1e-9

func near(a, b, eps float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= eps
}

func TestNormal(t *testing.T) {
	for _, c := range []struct{ p, z float64 }{
		{0.5, 0}, {0.975, 1.959963984540054}, {0.025, -1.959963984540054}, {0.8413447460685429, 1},
	} {
		if got := NormalQuantile(c.p); !near(got, c.z, 1e-9) {
			t.Errorf("NormalQuantile(%v) = %v, want %v", c.p, got, c.z)
		}
		if got := NormalCDF(c.z); !near(got, c.p, 1e-9) {
			t.Errorf("NormalCDF(%v) = %v, want %v", c.z, got, c.p)
		}
	}
	if !math.IsNaN(NormalQuantile(1.5)) {
		t.Error("NormalQuantile(1.5) is not NaN")
	}
}

func TestQuantile(t *testing.T) {
	x := []float64{1, 2, 3, 4, 5}
	for _, c := range []struct{ p, want float64 }{
		{0, 1}, {1, 5}, {0.5, 3}, {0.25, 2}, {0.1, 1.4},
	} {
		if got := Quantile(c.p, x); !near(got, c.want, tol) {
			t.Errorf("Quantile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if !math.IsNaN(Quantile(0.5, nil)) {
		t.Error("Quantile of empty is not NaN")
	}
}

func TestWilson(t *testing.T) {
	// Reference values: R's prop.test(correct = FALSE) / statsmodels
	// proportion_confint(method="wilson").
	for _, c := range []struct {
		k, n   int
		lo, hi float64
	}{
		{8, 10, 0.4901625, 0.9433178},
		{0, 10, 0, 0.2775328},
		{10, 10, 0.7224672, 1},
		{50, 100, 0.4038315, 0.5961685},
	} {
		lo, hi := Wilson(c.k, c.n, 0.95)
		if !near(lo, c.lo, 1e-6) || !near(hi, c.hi, 1e-6) {
			t.Errorf("Wilson(%d, %d) = [%v, %v], want [%v, %v]", c.k, c.n, lo, hi, c.lo, c.hi)
		}
	}
	if lo, hi := Wilson(1, 0, 0.95); !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Error("Wilson with n = 0 is not NaN")
	}
}

func TestTwoProportionZ(t *testing.T) {
	// 45/100 vs 30/100: pooled 0.375, se = sqrt(.375*.625*.02) = 0.0684653.
	z, p := TwoProportionZ(45, 100, 30, 100)
	if !near(z, 0.15/0.06846532, 1e-6) || !near(p, 0.028460, 1e-5) {
		t.Errorf("TwoProportionZ = %v, %v", z, p)
	}
	if z, p := TwoProportionZ(5, 5, 7, 7); z != 0 || p != 1 {
		t.Errorf("all successes: %v, %v", z, p)
	}
	if z, _ := TwoProportionZ(1, 0, 1, 1); !math.IsNaN(z) {
		t.Error("n1 = 0 is not NaN")
	}
}

func TestBootstrapCoverage(t *testing.T) {
	// The 95% percentile interval of a mean of 200 normal draws covers the
	// true mean in about 95% of datasets.
	rng := rand.New(rand.NewPCG(1, 2))
	const datasets, n = 200, 200
	covered := 0
	x := make([]float64, n)
	for range datasets {
		for i := range x {
			x[i] = 3 + rng.NormFloat64()
		}
		lo, hi := Bootstrap(n, 400, 0.95, func(idx []int) float64 {
			var s float64
			for _, i := range idx {
				s += x[i]
			}
			return s / float64(len(idx))
		}, rng)
		if lo <= 3 && 3 <= hi {
			covered++
		}
	}
	if rate := float64(covered) / datasets; rate < 0.88 || rate > 0.99 {
		t.Errorf("coverage %v, want about 0.95", rate)
	}
}

func TestBootstrapNaN(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	lo, hi := Bootstrap(5, 100, 0.95, func([]int) float64 { return math.NaN() }, rng)
	if !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("all-NaN statistic gave [%v, %v]", lo, hi)
	}
	lo, hi = Bootstrap(0, 100, 0.95, func([]int) float64 { return 1 }, rng)
	if !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("n = 0 gave [%v, %v]", lo, hi)
	}
	lo, hi = Bootstrap(3, 50, 0.95, func([]int) float64 { return 7 }, rng)
	if lo != 7 || hi != 7 {
		t.Errorf("constant statistic gave [%v, %v]", lo, hi)
	}
}

func TestOPE(t *testing.T) {
	w := []float64{2, 0, 4, 0}
	r := []float64{1, 5, 0.5, 1}
	if got := IPS(w, r); !near(got, (2+2)/4.0, tol) {
		t.Errorf("IPS = %v", got)
	}
	if got := SNIPS(w, r); !near(got, 4/6.0, tol) {
		t.Errorf("SNIPS = %v", got)
	}
	if got := SNIPS([]float64{0, 0}, []float64{1, 1}); !math.IsNaN(got) {
		t.Errorf("SNIPS without support = %v", got)
	}
	zero := make([]float64, 4)
	if got, want := DR(w, r, zero, zero), IPS(w, r); !near(got, want, tol) {
		t.Errorf("DR with q = 0 is %v, IPS %v", got, want)
	}
	q := []float64{0.5, 0.5, 0.5, 0.5}
	if got := DR(zero, r, q, q); !near(got, 0.5, tol) {
		t.Errorf("DR with w = 0 is %v, want the direct method 0.5", got)
	}
	if got := ESS([]float64{2, 2, 0, 0}); !near(got, 2, tol) {
		t.Errorf("ESS = %v", got)
	}
	if got := ESS(zero); got != 0 {
		t.Errorf("ESS of zeros = %v", got)
	}
	dst := make([]float64, 4)
	if n := Clip(dst, w, 3); n != 1 || dst[2] != 3 || dst[0] != 2 {
		t.Errorf("Clip = %v, %d", dst, n)
	}
	if p := EpsilonGreedy(true, 0.2, 0.5); !near(p, 0.9, tol) {
		t.Errorf("EpsilonGreedy greedy = %v", p)
	}
	if p := EpsilonGreedy(false, 0.2, 0.3); !near(p, 0.06, tol) {
		t.Errorf("EpsilonGreedy other = %v", p)
	}
}

func TestMeanLower(t *testing.T) {
	// mean 2.5, s = √(5/3), z(0.95) = 1.644854: 2.5 − 1.644854·1.290994/2.
	if got := MeanLower([]float64{1, 2, 3, 4}, 0.95); !near(got, 2.5-1.6448536269514722*math.Sqrt(5.0/3)/2, 1e-9) {
		t.Errorf("MeanLower = %v", got)
	}
	if !math.IsNaN(MeanLower([]float64{1}, 0.95)) {
		t.Error("MeanLower of one value is not NaN")
	}
}

// TestBettingLowerTimeUniform: on sequences whose mean is 0 (a saved turn
// with probability 0.2, else a detour costing 0.25), the betting bound
// computed after every value rises above 0 at some point in at most α of
// the sequences, where the normal bound, looked at as often, does so far
// more often than α.
func TestBettingLowerTimeUniform(t *testing.T) {
	const alpha, sequences, length = 0.05, 300, 60
	rng := rand.New(rand.NewPCG(3, 4))
	var betting, normal int
	x := make([]float64, length)
	for range sequences {
		for i := range x {
			x[i] = -0.25
			if rng.Float64() < 0.2 {
				x[i] = 1
			}
		}
		var b, n bool
		for k := 5; k <= length; k++ {
			b = b || BettingLower(x[:k], -0.25, alpha) > 0
			n = n || MeanLower(x[:k], 1-alpha) > 0
		}
		if b {
			betting++
		}
		if n {
			normal++
		}
	}
	t.Logf("betting %d, normal %d of %d", betting, normal, sequences)
	if rate := float64(betting) / sequences; rate > alpha {
		t.Errorf("the betting bound rose above the mean in %.3f of the sequences, want at most %v", rate, alpha)
	}
	if rate := float64(normal) / sequences; rate <= 2*alpha {
		t.Errorf("the normal bound, looked at after every value, rose above the mean in only %.3f of the sequences", rate)
	}
}

// TestBettingLowerFinds: on sequences whose mean is 0.3 the bound rises
// above 0, and it never passes the values' largest.
func TestBettingLowerFinds(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := make([]float64, 400)
	for i := range x {
		x[i] = -0.25
		if rng.Float64() < 0.44 {
			x[i] = 1
		}
	}
	if l := BettingLower(x, -0.25, 0.05); !(l > 0 && l < 0.3) {
		t.Errorf("bound %v on 400 values of mean 0.3", l)
	}
	if l := BettingLower([]float64{1, 1, 1}, 0, 0.05); l > 1 || l < 0 {
		t.Errorf("bound %v of three 1s", l)
	}
	if l := BettingLower([]float64{-1}, 0, 0.05); !math.IsNaN(l) {
		t.Errorf("a value below the floor gave %v", l)
	}
}

// TestBootstrapBCaSkewed: on skewed data (the mean of 25 exponential
// draws), the BCa interval misses the true mean about as often on each
// side, where the percentile interval misses mostly below it.
func TestBootstrapBCaSkewed(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const datasets, n = 400, 25
	x := make([]float64, n)
	mean := func(idx []int, out []float64) {
		var s float64
		for _, i := range idx {
			s += x[i]
		}
		out[0] = s / float64(len(idx))
	}
	var bcaLow, bcaHigh, pctLow int
	for range datasets {
		var sum float64
		for i := range x {
			x[i] = rng.ExpFloat64()
			sum += x[i]
		}
		jack := func(i int, out []float64) { out[0] = (sum - x[i]) / (n - 1) }
		lo, hi := BootstrapBCa(n, 1000, 0.9, 1, mean, jack, rng)
		if hi[0] < 1 {
			bcaLow++
		}
		if lo[0] > 1 {
			bcaHigh++
		}
		plo, phi := BootstrapVec(n, 1000, 0.9, 1, mean, rng)
		_ = plo
		if phi[0] < 1 {
			pctLow++
		}
	}
	t.Logf("BCa: %d below, %d above; percentile: %d below, of %d", bcaLow, bcaHigh, pctLow, datasets)
	if bcaLow >= pctLow || bcaLow > 2*bcaHigh+10 {
		t.Errorf("BCa missed below %d times and above %d, the percentile interval below %d", bcaLow, bcaHigh, pctLow)
	}
}

func TestBootstrapBCaConstant(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	lo, hi := BootstrapBCa(4, 100, 0.95, 1, func(_ []int, out []float64) { out[0] = 3 }, func(_ int, out []float64) { out[0] = 3 }, rng)
	if lo[0] != 3 || hi[0] != 3 {
		t.Errorf("constant statistic gave [%v, %v]", lo[0], hi[0])
	}
}
