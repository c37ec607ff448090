package main

import "testing"

func TestMetric(t *testing.T) {
	out := []byte("goos: linux\nBenchmarkFlowRetained-2   \t  100000\t     69447 ns/op\t       105.1 retained-B/call\t   11818 B/op\t     167 allocs/op\nPASS\n")
	for unit, want := range map[string]float64{"retained-B/call": 105.1, "ns/op": 69447, "allocs/op": 167} {
		if v, ok := metric(out, unit); !ok || v != want {
			t.Errorf("metric(%s) = %v, %v; want %v", unit, v, ok, want)
		}
	}
	if _, ok := metric(out, "rows/s"); ok {
		t.Error("a metric the output does not report was found")
	}
}
