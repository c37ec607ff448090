package proxy

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/hoist-mcp/hoist/guards"
)

// BenchmarkGuardedWrite measures what --guards adds to a write on its way
// to the server (issue 10, point 7): hostLine holds the line, the owner
// checks every retail rule over the session's facts, logs the verdicts
// and answers "forward". The baseline, measured in the same run, is a read
// the guards do not hold, handed to the owner without waiting. Each op is
// timed; p50 and p99 are reported beside ns/op, and "added" subtracts the
// baseline's:
//
//	go test -run - -bench GuardedWrite -benchtime 20000x ./proxy
func BenchmarkGuardedWrite(b *testing.B) {
	write := []byte(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"cancel_pending_order","arguments":{"order_id":"#W1a","reason":"no longer needed"}}}`)
	read := []byte(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"get_order_details","arguments":{"order_id":"#W1a"}}}`)
	var base time.Duration
	for _, tc := range []struct {
		name string
		line []byte
	}{{"baseline read", read}, {"checked write", write}} {
		b.Run(tc.name, func(b *testing.B) {
			a := benchGuardsSession(b)
			answer := []byte(`{"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"Error: Non-pending order cannot be cancelled"}],"isError":true}}` + "\n")
			took := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if a.hostLine(tc.line) {
					b.Fatal("the write was refused: the bench measures a forwarded one")
				}
				took = append(took, time.Since(t0))
				a.fromServer(answer)
			}
			b.StopTimer()
			if string(tc.line) == string(write) {
				a.close()
				if log, _ := os.ReadFile(a.guardsLogPath()); !bytes.Contains(log, []byte(`"rule":"retail.order_status","verdict":"refuse"`)) {
					b.Fatalf("the rules lacked the session's facts: %.300s", log)
				}
			}
			slices.Sort(took)
			p50, p99 := took[len(took)/2], took[min(len(took)-1, len(took)*99/100)]
			b.ReportMetric(float64(p50.Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(p99.Nanoseconds()), "p99-ns")
			if string(tc.line) == string(read) {
				base = p99
			} else if base > 0 {
				b.ReportMetric(float64((p99 - base).Nanoseconds()), "added-p99-ns")
			}
		})
	}
}

// benchGuardsSession starts an owner with the retail guards and shows it
// user_1 and the order #W1a, cancelled, so that every rule has its facts;
// retail.order_status only logs, so the cancel goes on to the server.
func benchGuardsSession(b *testing.B) *active {
	b.Helper()
	a := newActive(FlowOptions{}, "retail", func(string, ...any) {})
	o := Options{Guards: &GuardsOptions{Domain: "retail", Modes: map[string]guards.Mode{"retail.order_status": guards.Log},
		Log: b.TempDir() + "/{session}.guards.jsonl"}}
	if err := a.setUpActive(o, nil, nil, "bench"); err != nil {
		b.Fatal(err)
	}
	a.toHost = func([]byte) {}
	a.toServer = func([]byte) {}
	a.start()
	b.Cleanup(func() { a.close() })
	for i, c := range []struct{ call, text string }{
		{`{"name":"find_user_id_by_email","arguments":{"email":"c1@example.com"}}`, `user_1`},
		{`{"name":"get_user_details","arguments":{"user_id":"user_1"}}`, `{\"user_id\": \"user_1\", \"name\": {\"first_name\": \"Ava\", \"last_name\": \"Lee\"}, \"email\": \"c1@example.com\", \"payment_methods\": {\"credit_card_1000001\": {\"source\": \"credit_card\", \"id\": \"credit_card_1000001\"}}, \"orders\": [\"#W1a\", \"#W1b\"]}`},
		{`{"name":"get_order_details","arguments":{"order_id":"#W1a"}}`, `{\"order_id\": \"#W1a\", \"user_id\": \"user_1\", \"status\": \"cancelled\", \"items\": [], \"payment_history\": [{\"transaction_type\": \"payment\", \"amount\": 10.0, \"payment_method_id\": \"credit_card_1000001\"}]}`},
	} {
		a.hostLine([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, i+1, c.call)))
		a.fromServer([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"%s"}],"isError":false}}`+"\n", i+1, c.text)))
	}
	return a
}
