package flow

import (
	"encoding/json"
	"testing"

	"github.com/hoist-mcp/hoist/oracle"
	"github.com/hoist-mcp/hoist/oracle/client"
)

// BenchmarkDecision times the first decision after an agent's result on the
// shop flow: parse nothing more than the bindings need, bind, decide.
func BenchmarkDecision(b *testing.B) {
	f := shopFlow(b)
	args := json.RawMessage(`{"x":"c7@example.com"}`)
	text := `{"first":"i1","orders":["#a","#b","#c"],"profile":{"zip":"10001","name":"Ann"},"items":[{"id":1},{"id":2},{"id":3}]}`
	var s *Session
	n := 0
	for b.Loop() {
		if n%32 == 0 {
			s, _ = NewSession(f, Options{Rule: Rule{Threshold: 0.3}})
		}
		n++
		i := s.Call("get_user", args)
		s.Result(i, text, false)
		run := s.Run(i)
		run.Next()
	}
}

// BenchmarkDecisionOracle times the first decision at the same site under
// an arbiter that weighs the System-One model's answer, in a new session
// each time (so no answer is remembered from the last): "none" gives the
// session no oracle (the baseline), "mock" answers by the rule, and
// "cached" is jev with every answer in its cache (the common case of a
// served flow: one small file read per question, no network). Four
// questions per decision: get_item, and get_order over three orders.
func BenchmarkDecisionOracle(b *testing.B) {
	f := shopFlow(b)
	f.Arbiter = &Arbiter{Features: []string{FeatureBias, FeatureReach, FeatureOracle}, Weights: []float64{-1, 1, 1}}
	args := json.RawMessage(`{"x":"c7@example.com"}`)
	text := `{"first":"i1","orders":["#a","#b","#c"],"profile":{"zip":"10001","name":"Ann"},"items":[{"id":1},{"id":2},{"id":3}]}`
	cache, err := client.OpenCache(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	jev, err := client.New(client.Config{Mode: client.ModeJev, Model: "m", Cache: cache, Getenv: func(string) string { return "" }})
	if err != nil {
		b.Fatal(err)
	}
	decide := func(o Oracle) Decision {
		s, _ := NewSession(f, Options{Rule: Rule{Threshold: 0.3}, Oracle: o})
		i := s.Call("get_user", args)
		s.Result(i, text, false)
		return s.Run(i).Next()
	}
	// Warm the cache with the mock's answers, under the keys jev asks.
	for _, o := range decide(client.NewMock("m")).Offers {
		if err := cache.Put(client.Entry{Key: o.OracleKey, Model: "m", Prompt: oracle.VersionLookup, PYes: *o.POracle, From: oracle.FromMock}); err != nil {
			b.Fatal(err)
		}
	}
	if d := decide(jev); len(d.Offers) != 4 || d.Offers[0].POracle == nil || !d.Offers[0].OracleCached {
		b.Fatalf("the cache does not answer: %+v", d.Offers)
	}
	for _, bc := range []struct {
		name string
		o    Oracle
	}{{"none", nil}, {"mock", client.NewMock("m")}, {"cached", jev}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				decide(bc.o)
			}
		})
	}
}
