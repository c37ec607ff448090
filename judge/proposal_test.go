package judge

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/guards"
)

func TestProposalCheck(t *testing.T) {
	proposal := guards.Confirmation{
		AgentSaid: "To confirm: I will return item 6117189161 (the kettle) of order #W2378157, refunding to credit_card_4421486. Proceed?",
		UserSaid:  "Yes.",
	}
	tests := []struct {
		name string
		c    guards.Confirmation
		args string
		want []Mismatch
	}{
		{"as proposed", proposal, `{"order_id":"#W2378157","item_ids":["6117189161"],"payment_method_id":"credit_card_4421486"}`, nil},
		{"another order", proposal, `{"order_id":"#W2378156","item_ids":["6117189161"],"payment_method_id":"credit_card_4421486"}`,
			[]Mismatch{{Argument: "order_id", Value: "#W2378156", Named: []string{"#W2378157"}}}},
		{"another item, and a card never named", guards.Confirmation{AgentSaid: "Return item 6117189161 of order #W2378157?", UserSaid: "yes"},
			`{"item_ids":["9999999999"],"order_id":"#W2378157","payment_method_id":"gift_card_0000001"}`,
			[]Mismatch{{Argument: "item_ids[0]", Value: "9999999999", Named: []string{"6117189161"}}}},
		{"the item given up beside the one named", guards.Confirmation{AgentSaid: "The waterproof boots are item 8277474082. Exchange?", UserSaid: "yes"},
			`{"order_id":"#W7181492","item_ids":["8118291112"],"new_item_ids":["8277474082"]}`, nil},
		{"the reply names another", guards.Confirmation{AgentSaid: "Cancel which order?", UserSaid: "Yes, cancel #W1000001 please"},
			`{"order_id":"#W2378157","reason":"no longer needed"}`,
			[]Mismatch{{Argument: "order_id", Value: "#W2378157", Named: []string{"#W1000001"}}}},
		{"nothing named", guards.Confirmation{AgentSaid: "Shall I go ahead?", UserSaid: "yes"}, `{"order_id":"#W2378157"}`, nil},
		{"short numbers are not ids", guards.Confirmation{AgentSaid: "2 bags for 50 dollars?", UserSaid: "yes"}, `{"total_baggages":"3","amount":"70"}`, nil},
		{"not an object", proposal, `not json`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ProposalCheck(tt.c, json.RawMessage(tt.args))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ProposalCheck (-want +got):\n%s", diff)
			}
		})
	}
}
