package proxy

import (
	"slices"
	"testing"
	"time"
)

// BenchmarkLimitedCall measures what --limit adds to a call on its way to
// the server: hostLine holds the line, the owner asks the buckets and
// answers "forward". The baseline, in the same run, is the same call with
// no limit, handed to the owner without waiting. p50 and p99 are reported
// beside ns/op; "added" subtracts the baseline's:
//
//	go test -run - -bench LimitedCall -benchtime 20000x ./proxy
func BenchmarkLimitedCall(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"get_order_details","arguments":{"order_id":"#W1a"}}}`)
	answer := []byte(`{"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"{}"}]}}` + "\n")
	var base time.Duration
	for _, tc := range []struct {
		name   string
		limits *LimitsOptions
	}{
		{"baseline unlimited", nil},
		{"limited", &LimitsOptions{MaxCalls: 1 << 30}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			a := newActive(FlowOptions{}, "retail", func(string, ...any) {})
			o := Options{Commit: tc.limits == nil, Limits: tc.limits}
			for _, s := range []string{"*=1000000000/s", "get_order_details=1000000000/s"} {
				if tc.limits == nil {
					break
				}
				r, err := ParseLimit(s)
				if err != nil {
					b.Fatal(err)
				}
				tc.limits.Rules = append(tc.limits.Rules, r)
			}
			if err := a.setUpActive(o, nil, nil, "bench"); err != nil {
				b.Fatal(err)
			}
			a.toHost = func([]byte) {}
			a.toServer = func([]byte) {}
			a.start()
			defer a.close()
			took := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if a.hostLine(line) {
					b.Fatal("the call was refused: the bench measures a forwarded one")
				}
				took = append(took, time.Since(t0))
				a.fromServer(answer)
			}
			b.StopTimer()
			slices.Sort(took)
			p50, p99 := took[len(took)/2], took[min(len(took)-1, len(took)*99/100)]
			b.ReportMetric(float64(p50.Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(p99.Nanoseconds()), "p99-ns")
			if tc.limits == nil {
				base = p99
			} else if base > 0 {
				b.ReportMetric(float64((p99 - base).Nanoseconds()), "added-p99-ns")
			}
		})
	}
}
