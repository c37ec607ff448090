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
