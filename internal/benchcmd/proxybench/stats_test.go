package main

import (
	"fmt"
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	us := func(xs ...int) []time.Duration {
		var d []time.Duration
		for _, x := range xs {
			d = append(d, time.Duration(x)*time.Microsecond)
		}
		return d
	}
	tests := []struct {
		xs   []time.Duration
		q    float64
		want time.Duration
	}{
		{nil, 0.5, 0},
		{us(7), 0.5, 7 * time.Microsecond},
		{us(7), 0.99, 7 * time.Microsecond},
		{us(4, 1, 3, 2), 0.5, 2 * time.Microsecond},  // ⌈2⌉-1 = 1
		{us(4, 1, 3, 2), 0.75, 3 * time.Microsecond}, // ⌈3⌉-1 = 2
		{us(4, 1, 3, 2), 1, 4 * time.Microsecond},
		{us(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 0.99, 10 * time.Microsecond}, // ⌈9.9⌉-1 = 9
		{us(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 0.9, 9 * time.Microsecond},   // ⌈9⌉-1 = 8
	}
	for _, tt := range tests {
		in := fmt.Sprint(tt.xs)
		if got := quantile(tt.xs, tt.q); got != tt.want {
			t.Errorf("quantile(%v, %v) = %v, want %v", tt.xs, tt.q, got, tt.want)
		}
		if fmt.Sprint(tt.xs) != in {
			t.Errorf("quantile changed its input: %v, was %s", tt.xs, in)
		}
	}
}

func Example_quantile() {
	calls := []time.Duration{90, 40, 50, 60, 45, 55, 48, 52, 47, 400}
	fmt.Println(quantile(calls, 0.5), quantile(calls, 0.99))
	// Output: 50ns 400ns
}
