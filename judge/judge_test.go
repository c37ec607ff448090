package judge

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/guards"
	"github.com/hoist-mcp/hoist/oracle"
	"github.com/hoist-mcp/hoist/oracle/client"
)

var cancel = json.RawMessage(`{"order_id":"#W2378156","reason":"no longer needed"}`)

func TestAsk(t *testing.T) {
	mock := client.NewMock("m")
	proposed := "I can cancel order #W2378156 because it is no longer needed. Shall I go ahead?"
	tests := []struct {
		name       string
		j          Judge
		conf       guards.Confirmation
		fails      bool
		second     bool
		refusalHas string
	}{
		{"yes", Judge{Oracle: mock}, guards.Confirmation{AgentSaid: proposed, UserSaid: "Yes, please."}, false, false, ""},
		{"no", Judge{Oracle: mock}, guards.Confirmation{AgentSaid: proposed, UserSaid: "Wait, not yet."}, true, false, "(confirmation judge: p_yes 0.10); describe the change"},
		{"no reply is no opinion", Judge{Oracle: mock}, guards.Confirmation{AgentSaid: proposed}, false, false, ""},
		{"second yes", Judge{Oracle: mock, Second: SecondProposed}, guards.Confirmation{AgentSaid: proposed, UserSaid: "yes"}, false, true, ""},
		{"second no", Judge{Oracle: mock, Second: SecondProposed}, guards.Confirmation{AgentSaid: "Anything else?", UserSaid: "yes"}, true, true, "(confirmation judge: p_yes 0.90; proposed: p_yes 0.10)"},
		{"second shadow", Judge{Oracle: mock, Second: SecondProposed, SecondShadow: true}, guards.Confirmation{AgentSaid: "Anything else?", UserSaid: "yes"}, false, true, ""},
		{"first no asks no second", Judge{Oracle: mock, Second: SecondDescribed}, guards.Confirmation{AgentSaid: proposed, UserSaid: "no"}, true, false, "p_yes 0.10)"},
		{"shadow asks after a no", Judge{Oracle: mock, Second: SecondDescribed, SecondShadow: true}, guards.Confirmation{AgentSaid: proposed, UserSaid: "no"}, true, true, "p_yes 0.10)"},
		{"threshold", Judge{Oracle: mock, Threshold: 0.95}, guards.Confirmation{AgentSaid: proposed, UserSaid: "yes"}, true, false, "p_yes 0.90)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.j.Ask(context.Background(), "cancel_pending_order", cancel, tt.conf)
			if v.Fails != tt.fails {
				t.Errorf("Fails = %v, want %v (%+v)", v.Fails, tt.fails, v)
			}
			if (v.Second != nil) != tt.second {
				t.Errorf("second asked = %v, want %v", v.Second != nil, tt.second)
			}
			if n := len(v.Keys()); n != 1+btoi(tt.second) {
				t.Errorf("Keys() has %d keys", n)
			}
			if tt.refusalHas != "" {
				r := v.Refusal("cancel_pending_order")
				if !strings.HasPrefix(r, "Refused by the policy check, so cancel_pending_order was not run and nothing changed: the customer has not explicitly agreed to this exact change (") ||
					!strings.Contains(r, tt.refusalHas) || !strings.HasSuffix(r, "; describe the change and ask the customer to confirm it first.") {
					t.Errorf("Refusal = %q, want it to hold %q", r, tt.refusalHas)
				}
			}
		})
	}
}

// The manual's own example, word for word.
func TestRefusalText(t *testing.T) {
	v := Verdict{First: oracle.Answer{Answered: true, PYes: 0.15}, Threshold: 0.5, Fails: true}
	want := "Refused by the policy check, so cancel_pending_order was not run and nothing changed: the customer has not explicitly agreed to this exact change (confirmation judge: p_yes 0.15); describe the change and ask the customer to confirm it first."
	if got := v.Refusal("cancel_pending_order"); got != want {
		t.Errorf("Refusal =\n %q\nwant\n %q", got, want)
	}
}

// A second no after a first question without an answer names no p_yes for
// the first.
func TestRefusalAfterNoFirstAnswer(t *testing.T) {
	v := Verdict{First: oracle.Answer{Why: oracle.Miss}, Second: &oracle.Answer{Answered: true, PYes: 0.1}, SecondKind: SecondProposed, Threshold: 0.5, Fails: true}
	if got := v.Refusal("x"); !strings.Contains(got, "(confirmation judge: no answer; proposed: p_yes 0.10)") {
		t.Errorf("Refusal = %q", got)
	}
}

// A judge that cannot answer refuses nothing: replay over an empty cache
// misses every question.
func TestNoAnswerRefusesNothing(t *testing.T) {
	cache, err := client.OpenCache(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	j := Judge{Oracle: client.NewReplay("m", cache), Second: SecondProposed}
	v := j.Ask(context.Background(), "cancel_pending_order", cancel, guards.Confirmation{AgentSaid: "ok?", UserSaid: "no"})
	if v.Fails || v.First.Answered || v.Second == nil || v.Second.Answered {
		t.Errorf("verdict %+v: want unanswered questions and no failure", v)
	}
	if v.First.Why != oracle.Miss {
		t.Errorf("Why = %q, want %q", v.First.Why, oracle.Miss)
	}
}

func TestParseSecond(t *testing.T) {
	for _, s := range []string{"proposed", "described"} {
		if v, err := ParseSecond(s); err != nil || string(v) != s {
			t.Errorf("ParseSecond(%q) = %q, %v", s, v, err)
		}
	}
	if _, err := ParseSecond("both"); err == nil || !strings.Contains(err.Error(), "want proposed or described") {
		t.Errorf("ParseSecond(both): %v", err)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
