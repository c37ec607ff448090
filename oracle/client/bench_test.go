package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/hoist-mcp/hoist/oracle"
	"github.com/hoist-mcp/hoist/oracle/client"
)

// nop answers every question at once: the baseline, a judge that costs
// nothing but the question's building.
type nop struct{}

func (nop) Ask(context.Context, oracle.Question) oracle.Answer {
	return oracle.Answer{Answered: true, PYes: 1}
}

// BenchmarkJudgedWriteCacheHit is the latency the judge adds to a write
// whose answer is cached (issue 11, "Measured"): find the last exchange,
// build the question, key it and read its entry. It runs, interleaved in
// the same loop, the same steps with an oracle that answers at once, and
// reports both and their ratio, so the figure reads the same on a slower
// machine: ns/hit, ns/baseline and hit/baseline.
func BenchmarkJudgedWriteCacheHit(b *testing.B) {
	cache, err := client.OpenCache(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	// No server: a miss would fail at once, and the loop checks for hits.
	j, err := client.NewJev(client.Config{URL: "http://127.0.0.1:9/v1", Model: model, Cache: cache, Getenv: env{client.EnvKey: secret}.get})
	if err != nil {
		b.Fatal(err)
	}
	conv := []oracle.Message{
		{Role: "user", Content: "Hi, I'd like to cancel an order I placed yesterday. My email is c1@example.com."},
		{Role: "assistant", Content: "I found order #W1a (1 item, $54.04, pending). To cancel it I need a reason: 'no longer needed' or 'ordered by mistake'."},
		{Role: "user", Content: "No longer needed."},
		{Role: "assistant", Content: "I will cancel order #W1a for the reason 'no longer needed'; the refund goes to your original payment method. Shall I proceed?"},
		{Role: "user", Content: "Yes, please go ahead."},
	}
	call := oracle.Call{Tool: "cancel_pending_order", Arguments: []byte(`{"order_id":"#W1a","reason":"no longer needed"}`)}
	q := oracle.Confirmation(oracle.LastExchange(conv), call)
	if err := cache.Put(client.Entry{Key: j.Key(q), Model: model, Prompt: q.Version, PYes: 0.97, From: oracle.FromLogprobs, Word: "yes"}); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var base oracle.Oracle = nop{}
	var hit, baseline time.Duration
	for b.Loop() {
		t0 := time.Now()
		base.Ask(ctx, oracle.Confirmation(oracle.LastExchange(conv), call))
		t1 := time.Now()
		a := j.Ask(ctx, oracle.Confirmation(oracle.LastExchange(conv), call))
		t2 := time.Now()
		if !a.Cached {
			b.Fatalf("not a hit: %+v", a)
		}
		baseline += t1.Sub(t0)
		hit += t2.Sub(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(hit.Nanoseconds())/n, "ns/hit")
	b.ReportMetric(float64(baseline.Nanoseconds())/n, "ns/baseline")
	b.ReportMetric(float64(hit)/float64(baseline), "hit/baseline")
}
