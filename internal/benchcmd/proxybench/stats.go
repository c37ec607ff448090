package main

import (
	"math"
	"slices"
	"time"
)

// quantile returns the q-quantile (0 < q ≤ 1) of xs by the nearest-rank
// method: the smallest x such that at least q·n of the n values are ≤ x,
// that is sorted[⌈q·n⌉-1]. It returns 0 for no values. xs is not changed.
func quantile(xs []time.Duration, q float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}
