package judge

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hoist-mcp/hoist/guards"
	"github.com/hoist-mcp/hoist/oracle"
)

// TestCallDigest: one call is one digest however its arguments are
// spelled (member order, spacing, escapes); another value, tool or method
// is another.
func TestCallDigest(t *testing.T) {
	base := CallDigest("tools/call", "cancel", []byte(`{"order_id":"#W1a","reason":"no longer needed"}`))
	for _, same := range []string{
		`{"reason":"no longer needed","order_id":"#W1a"}`,
		` { "order_id" : "#W\u0031a", "reason":"no longer needed" } `,
		`{"order_id":"#W1a","reason":"no longer n\u0065eded"}`,
	} {
		if got := CallDigest("tools/call", "cancel", []byte(same)); got != base {
			t.Errorf("%s: %s, want %s", same, got, base)
		}
	}
	for _, other := range []struct{ method, tool, args string }{
		{"tools/call", "cancel", `{"order_id":"#W2a","reason":"no longer needed"}`},
		{"tools/call", "cancel", `{"order_id":"#W1a","reason":"no longer needed","extra":1}`},
		{"tools/call", "cancel", `{"Order_ID":"#W1a","reason":"no longer needed"}`},
		{"tools/call", "Cancel", `{"order_id":"#W1a","reason":"no longer needed"}`},
		{"prompts/get", "cancel", `{"order_id":"#W1a","reason":"no longer needed"}`},
	} {
		if CallDigest(other.method, other.tool, []byte(other.args)) == base {
			t.Errorf("%+v has the digest of another call", other)
		}
	}
	if !strings.HasPrefix(base, "sha256:") || len(base) != len("sha256:")+64 {
		t.Errorf("digest %s", base)
	}
}

func TestApprovalPasses(t *testing.T) {
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	args := []byte(`{"order_id":"#W1a"}`)
	a := Approve("tools/call", "cancel", args, "p/1", now, time.Minute)
	d := CallDigest("tools/call", "cancel", args)
	if err := a.Passes(d, "p/1", now.Add(59*time.Second)); err != nil {
		t.Errorf("within its minute: %v", err)
	}
	for _, tc := range []struct {
		digest, policy string
		at             time.Time
		want           string
	}{
		{CallDigest("tools/call", "cancel", []byte(`{"order_id":"#W2a"}`)), "p/1", now, "another call"},
		{d, "p/2", now, `policy "p/1"`},
		{d, "p/1", now.Add(time.Minute), "lapsed at 2026-12-04T10:01:00.000Z"},
	} {
		if err := a.Passes(tc.digest, tc.policy, tc.at); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Passes(%s, %s, %v) = %v; want %q", tc.digest, tc.policy, tc.at, err, tc.want)
		}
	}
}

// TestAskApproves: a verdict that lets a write through carries the
// approval of that call under the judge's policy; one that fails it
// carries none.
func TestAskApproves(t *testing.T) {
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	conf := guards.Confirmation{AgentSaid: "Cancel #W1a?", UserSaid: "Yes."}
	args := []byte(`{"order_id":"#W1a"}`)
	for _, tc := range []struct {
		p     float64
		fails bool
	}{{0.9, false}, {0.1, true}} {
		j := Judge{Oracle: fixed(tc.p), Now: func() time.Time { return now }, Second: SecondProposed}
		v := j.Ask(context.Background(), "cancel", args, conf)
		if v.Fails != tc.fails {
			t.Fatalf("p %v: fails %v", tc.p, v.Fails)
		}
		if tc.fails {
			if v.Approval != (Approval{}) {
				t.Errorf("a failed write was approved: %+v", v.Approval)
			}
			continue
		}
		if err := v.Approval.Passes(CallDigest("tools/call", "cancel", args), j.Policy(), now); err != nil {
			t.Errorf("the approval of the call judged: %v", err)
		}
		if j.Policy() != "confirm-judge confirm/1 threshold 0.5 second proposed/1" {
			t.Errorf("policy %q", j.Policy())
		}
	}
}

// fixed answers every question with P(yes) p.
type fixed float64

func (f fixed) Ask(_ context.Context, q oracle.Question) oracle.Answer {
	return oracle.Answer{Answered: true, PYes: float64(f)}
}

// BenchmarkApprovalCheck: what binding a judged write to its approval
// costs the proxy, once per judged write: the call's digest and the check.
//
//	go test -run - -bench ApprovalCheck ./judge
func BenchmarkApprovalCheck(b *testing.B) {
	args := []byte(`{"order_id":"#W1a","reason":"no longer needed"}`)
	now := time.Now()
	a := Approve("tools/call", "cancel_pending_order", args, "p/1", now, 0)
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Passes(CallDigest("tools/call", "cancel_pending_order", args), "p/1", now); err != nil {
			b.Fatal(err)
		}
	}
}
