package guards

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A crafted retail trajectory's records, in τ²-bench's shapes.

func retailUserJSON(id string, payments map[string]string) string {
	var pm []string
	for pid, src := range payments {
		entry := fmt.Sprintf(`"%s": {"source": "%s", "id": "%s"`, pid, src, pid)
		if src == "gift_card" {
			entry += `, "balance": 60.0`
		}
		pm = append(pm, entry+"}")
	}
	return fmt.Sprintf(`{"user_id": "%s", "name": {"first_name": "Ava", "last_name": "Kovacs"}, "email": "a@example.com", "payment_methods": {%s}, "orders": ["#W1a", "#W1b"]}`, id, strings.Join(pm, ", "))
}

func retailOrderJSON(id, user, status, payer string) string {
	return fmt.Sprintf(`{"order_id": "%s", "user_id": "%s", "items": [{"name": "Hiking Boots", "product_id": "7363354090", "item_id": "1615379700", "price": 253.89, "options": {"size": "10"}}, {"name": "Water Bottle", "product_id": "8310926033", "item_id": "2366567022", "price": 54.04, "options": {}}], "status": "%s", "fulfillments": [], "payment_history": [{"transaction_type": "payment", "amount": 307.93, "payment_method_id": "%s"}]}`, id, user, status, payer)
}

const bootsProduct = `{"name": "Hiking Boots", "product_id": "7363354090", "variants": {"1615379700": {"item_id": "1615379700", "options": {"size": "10"}, "available": true, "price": 253.89}, "8277474082": {"item_id": "8277474082", "options": {"size": "12"}, "available": true, "price": 236.57}, "2658930189": {"item_id": "2658930189", "options": {"size": "9"}, "available": false, "price": 241.68}, "6159919747": {"item_id": "6159919747", "options": {"size": "11"}, "available": true, "price": 319.75}}}`

const bottleProduct = `{"name": "Water Bottle", "product_id": "8310926033", "variants": {"2366567022": {"item_id": "2366567022", "options": {}, "available": true, "price": 54.04}, "7843064651": {"item_id": "7843064651", "options": {}, "available": true, "price": 50.14}}}`

// retailSession is a session that identified user_1 and was shown its
// profile, order #W1a (status, paid by payer) and the boots' product.
func retailSession(t *testing.T, status, payer string) *Session {
	t.Helper()
	s, err := NewSession(Config{Domain: Retail})
	if err != nil {
		t.Fatal(err)
	}
	s.Message("user", "Hi, I am Ava, c1@example.com.")
	s.Result("find_user_id_by_email", raw(`{"email":"c1@example.com"}`), "user_1", false)
	s.Result("get_user_details", raw(`{"user_id":"user_1"}`), retailUserJSON("user_1", map[string]string{"credit_card_1": "credit_card", "gift_card_1": "gift_card", "paypal_1": "paypal"}), false)
	s.Result("get_order_details", raw(`{"order_id":"#W1a"}`), retailOrderJSON("#W1a", "user_1", status, payer), false)
	s.Result("get_product_details", raw(`{"product_id":"7363354090"}`), bootsProduct, false)
	s.Message("assistant", "Shall I go ahead?")
	s.Message("user", "Yes, please.")
	return s
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// verdictOf returns rule's verdict in c, failing when the rule gave none.
func verdictOf(t *testing.T, c Check, rule string) Verdict {
	t.Helper()
	for _, v := range c.Verdicts {
		if v.Rule == rule {
			return v
		}
	}
	t.Fatalf("no verdict of %s in %+v", rule, c.Verdicts)
	return Verdict{}
}

// ruleCase is one write checked by one rule, with the outcome and a part of
// the reason (or of the lacking fact) it must give.
type ruleCase struct {
	name    string
	session func(t *testing.T) *Session
	tool    string
	args    string
	want    Outcome
	says    string
}

func runRuleCases(t *testing.T, rule string, cases []ruleCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.session(t)
			c := s.Check(tc.tool, raw(tc.args))
			v := verdictOf(t, c, rule)
			if v.Outcome != tc.want {
				t.Fatalf("%s on %s %s: %s (%s%s), want %s", rule, tc.tool, tc.args, v.Outcome, v.Reason, v.Lacks, tc.want)
			}
			got := v.Reason + v.Lacks
			if !strings.Contains(got, tc.says) {
				t.Errorf("%s says %q, want it to say %q", rule, got, tc.says)
			}
			if tc.want == Refuse && v.Enforced && (c.Refused == nil || c.Refused.Rule != rule && verdictOf(t, c, c.Refused.Rule).Outcome != Refuse) {
				t.Errorf("an enforced refusal of %s, but Check.Refused is %+v", rule, c.Refused)
			}
		})
	}
}

func pending(t *testing.T) *Session   { return retailSession(t, "pending", "credit_card_1") }
func delivered(t *testing.T) *Session { return retailSession(t, "delivered", "credit_card_1") }

// bare is a session shown nothing.
func bare(domain string) func(t *testing.T) *Session {
	return func(t *testing.T) *Session {
		s, err := NewSession(Config{Domain: domain})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func TestRetailCancelReason(t *testing.T) {
	runRuleCases(t, "retail.cancel_reason", []ruleCase{
		{"an accepted reason", pending, "cancel_pending_order", `{"order_id":"#W1a","reason":"no longer needed"}`, Allow, ""},
		{"the other accepted reason", bare(Retail), "cancel_pending_order", `{"order_id":"#W1a","reason":"ordered by mistake"}`, Allow, ""},
		{"another reason", pending, "cancel_pending_order", `{"order_id":"#W1a","reason":"found it cheaper"}`, Refuse, "'found it cheaper' is not an accepted reason"},
		{"no reason given", pending, "cancel_pending_order", `{"order_id":"#W1a"}`, Lacks, "the call's reason"},
	})
}

func TestRetailOrderStatus(t *testing.T) {
	runRuleCases(t, "retail.order_status", []ruleCase{
		{"cancel a pending order", pending, "cancel_pending_order", `{"order_id":"#W1a","reason":"no longer needed"}`, Allow, ""},
		{"cancel a delivered order", delivered, "cancel_pending_order", `{"order_id":"#W1a","reason":"no longer needed"}`, Refuse, "order #W1a is delivered, and only a pending order can be cancelled"},
		{"modify a processed order", func(t *testing.T) *Session { return retailSession(t, "processed", "credit_card_1") },
			"modify_pending_order_address", `{"order_id":"#W1a"}`, Refuse, "only a pending order can be modified"},
		{"return a delivered order", delivered, "return_delivered_order_items", `{"order_id":"#W1a","item_ids":["2366567022"],"payment_method_id":"credit_card_1"}`, Allow, ""},
		{"exchange a pending order", pending, "exchange_delivered_order_items", `{"order_id":"#W1a"}`, Refuse, "only a delivered order can be exchanged"},
		{"an order never shown", pending, "cancel_pending_order", `{"order_id":"#W1b","reason":"no longer needed"}`, Lacks, "order #W1b, never shown"},
	})
}

func TestRetailOrderStatusFollowsWriteResults(t *testing.T) {
	s := pending(t)
	args := raw(`{"order_id":"#W1a","reason":"no longer needed"}`)
	if c := s.Check("cancel_pending_order", args); c.Refused != nil {
		t.Fatalf("first cancel refused: %+v", c.Refused)
	}
	s.Sent("cancel_pending_order", args)
	// The write answers with the order as it is after: cancelled.
	s.Result("cancel_pending_order", args, retailOrderJSON("#W1a", "user_1", "cancelled", "credit_card_1"), false)
	c := s.Check("cancel_pending_order", args)
	if c.Refused == nil || c.Refused.Rule != "retail.order_status" {
		t.Fatalf("a second cancel: refused by %+v, want retail.order_status", c.Refused)
	}
}

func TestRetailOncePerOrder(t *testing.T) {
	modify := `{"order_id":"#W1a","item_ids":["1615379700"],"new_item_ids":["8277474082"],"payment_method_id":"credit_card_1"}`
	t.Run("first change", func(t *testing.T) {
		c := pending(t).Check("modify_pending_order_items", raw(modify))
		if v := verdictOf(t, c, "retail.once_per_order"); v.Outcome != Allow {
			t.Fatalf("verdict %+v, want allow", v)
		}
	})
	t.Run("a second change while the first is in flight", func(t *testing.T) {
		s := pending(t)
		s.Sent("modify_pending_order_items", raw(modify))
		v := verdictOf(t, s.Check("modify_pending_order_items", raw(modify)), "retail.once_per_order")
		if v.Outcome != Refuse || !strings.Contains(v.Reason, "a call still in flight") {
			t.Fatalf("verdict %+v, want a refusal naming the call in flight", v)
		}
	})
	t.Run("after the first change was done", func(t *testing.T) {
		s := pending(t)
		s.Sent("modify_pending_order_items", raw(modify))
		s.Result("modify_pending_order_items", raw(modify), retailOrderJSON("#W1a", "user_1", "pending (item modified)", "credit_card_1"), false)
		v := verdictOf(t, s.Check("exchange_delivered_order_items", raw(modify)), "retail.once_per_order")
		if v.Outcome != Refuse || !strings.Contains(v.Reason, "(modify_pending_order_items)") {
			t.Fatalf("verdict %+v, want a refusal naming the earlier change", v)
		}
	})
	t.Run("after the first change failed", func(t *testing.T) {
		s := pending(t)
		s.Sent("modify_pending_order_items", raw(modify))
		s.Result("modify_pending_order_items", raw(modify), "Error: Insufficient gift card balance to pay for the new item", true)
		if v := verdictOf(t, s.Check("modify_pending_order_items", raw(modify)), "retail.once_per_order"); v.Outcome != Allow {
			t.Fatalf("verdict %+v, want allow: the first change did nothing", v)
		}
	})
}

func TestRetailSameProduct(t *testing.T) {
	withBottle := func(t *testing.T) *Session {
		s := pending(t)
		s.Result("get_product_details", raw(`{"product_id":"8310926033"}`), bottleProduct, false)
		return s
	}
	runRuleCases(t, "retail.same_product", []ruleCase{
		{"another option of the product", pending, "modify_pending_order_items", `{"order_id":"#W1a","item_ids":["1615379700"],"new_item_ids":["8277474082"],"payment_method_id":"credit_card_1"}`, Allow, ""},
		{"another product", withBottle, "modify_pending_order_items", `{"order_id":"#W1a","item_ids":["1615379700"],"new_item_ids":["7843064651"],"payment_method_id":"credit_card_1"}`, Refuse,
			"item 7843064651 is of product 8310926033 (Water Bottle), not of product 7363354090 (Hiking Boots) as item 1615379700 is"},
		{"an unavailable item", pending, "modify_pending_order_items", `{"order_id":"#W1a","item_ids":["1615379700"],"new_item_ids":["2658930189"],"payment_method_id":"credit_card_1"}`, Refuse, "item 2658930189 is not available"},
		{"the same item", pending, "modify_pending_order_items", `{"order_id":"#W1a","item_ids":["1615379700"],"new_item_ids":["1615379700"],"payment_method_id":"credit_card_1"}`, Refuse, "would change for itself"},
		// τ²-bench's exchange takes an item for itself, and a successful
		// episode did so (task of retail-gpt-4.1, reward 1): only a
		// modification must change the item.
		{"the same item in an exchange", delivered, "exchange_delivered_order_items", `{"order_id":"#W1a","item_ids":["1615379700"],"new_item_ids":["1615379700"],"payment_method_id":"credit_card_1"}`, Allow, ""},
		{"an item not in the order", pending, "modify_pending_order_items", `{"order_id":"#W1a","item_ids":["9999999999"],"new_item_ids":["8277474082"],"payment_method_id":"credit_card_1"}`, Refuse, "item 9999999999 is not in order #W1a"},
		{"fewer new items", pending, "modify_pending_order_items", `{"order_id":"#W1a","item_ids":["1615379700"],"new_item_ids":[],"payment_method_id":"credit_card_1"}`, Refuse, "1 item(s) to change and 0 new item(s)"},
		{"a new item whose product was never shown", pending, "modify_pending_order_items", `{"order_id":"#W1a","item_ids":["2366567022"],"new_item_ids":["7843064651"],"payment_method_id":"credit_card_1"}`, Lacks, "the product of item 7843064651"},
	})
}

func TestRetailPaymentMethod(t *testing.T) {
	runRuleCases(t, "retail.payment_method", []ruleCase{
		{"the user's own, another than the original", pending, "modify_pending_order_payment", `{"order_id":"#W1a","payment_method_id":"paypal_1"}`, Allow, ""},
		{"not the user's", pending, "modify_pending_order_payment", `{"order_id":"#W1a","payment_method_id":"credit_card_9"}`, Refuse, "credit_card_9 is not one of user_1's payment methods"},
		{"the original again", pending, "modify_pending_order_payment", `{"order_id":"#W1a","payment_method_id":"credit_card_1"}`, Refuse, "credit_card_1 already pays for order #W1a"},
		{"the original for an item change", pending, "modify_pending_order_items", `{"order_id":"#W1a","item_ids":["1615379700"],"new_item_ids":["8277474082"],"payment_method_id":"credit_card_1"}`, Allow, ""},
		{"the user never shown", func(t *testing.T) *Session {
			s := bare(Retail)(t)
			s.Result("get_order_details", raw(`{"order_id":"#W1a"}`), retailOrderJSON("#W1a", "user_1", "pending", "credit_card_1"), false)
			return s
		}, "modify_pending_order_payment", `{"order_id":"#W1a","payment_method_id":"paypal_1"}`, Lacks, "the payment methods of user_1"},
	})
}

func TestRetailGiftCardBalance(t *testing.T) {
	runRuleCases(t, "retail.gift_card_balance", []ruleCase{
		{"a gift card short of the order's total", pending, "modify_pending_order_payment", `{"order_id":"#W1a","payment_method_id":"gift_card_1"}`, Refuse,
			"gift card gift_card_1 has a balance of 60.00, less than the order's total of 307.93"},
		{"a gift card that covers a refund", pending, "modify_pending_order_items", `{"order_id":"#W1a","item_ids":["1615379700"],"new_item_ids":["8277474082"],"payment_method_id":"gift_card_1"}`, Allow, ""},
		{"a gift card short of the price difference", pending, "modify_pending_order_items", `{"order_id":"#W1a","item_ids":["1615379700"],"new_item_ids":["6159919747"],"payment_method_id":"gift_card_1"}`, Refuse,
			"less than the price difference of 65.86"},
		{"not a gift card", pending, "modify_pending_order_payment", `{"order_id":"#W1a","payment_method_id":"paypal_1"}`, Allow, ""},
		{"a new item's price never shown", pending, "modify_pending_order_items", `{"order_id":"#W1a","item_ids":["2366567022"],"new_item_ids":["7843064651"],"payment_method_id":"gift_card_1"}`, Lacks, "the price of item 7843064651"},
	})
}

func TestRetailRefundDestination(t *testing.T) {
	ret := func(pm string) string {
		return `{"order_id":"#W1a","item_ids":["2366567022"],"payment_method_id":"` + pm + `"}`
	}
	runRuleCases(t, "retail.refund_destination", []ruleCase{
		{"the original payment method", delivered, "return_delivered_order_items", ret("credit_card_1"), Allow, ""},
		{"one of the user's gift cards", delivered, "return_delivered_order_items", ret("gift_card_1"), Allow, ""},
		{"another payment method", delivered, "return_delivered_order_items", ret("paypal_1"), Refuse, "goes to the order's original payment method (credit_card_1) or one of the user's gift cards, and paypal_1 is neither"},
		{"a gift card made up", delivered, "return_delivered_order_items", ret("gift_card_0000000"), Refuse, "gift_card_0000000 is neither"},
		{"the order never shown", bare(Retail), "return_delivered_order_items", ret("paypal_1"), Lacks, "order #W1a, never shown"},
	})
}

func TestRetailOneUser(t *testing.T) {
	otherOrder := func(t *testing.T) *Session {
		s := pending(t)
		s.Result("get_order_details", raw(`{"order_id":"#W2a"}`), retailOrderJSON("#W2a", "user_2", "pending", "credit_card_2"), false)
		return s
	}
	runRuleCases(t, "retail.one_user", []ruleCase{
		{"the user's own order", pending, "cancel_pending_order", `{"order_id":"#W1a","reason":"no longer needed"}`, Allow, ""},
		{"another user's order", otherOrder, "cancel_pending_order", `{"order_id":"#W2a","reason":"no longer needed"}`, Refuse, "order #W2a is user_2's, and this conversation is with user_1"},
		{"another user's profile", pending, "modify_user_address", `{"user_id":"user_2","address1":"1 Elm St"}`, Refuse, "the profile of user_2 is not this conversation's user (user_1)"},
		{"an order the user's profile lists", pending, "cancel_pending_order", `{"order_id":"#W1b","reason":"no longer needed"}`, Allow, ""},
		{"nobody identified", bare(Retail), "cancel_pending_order", `{"order_id":"#W1a","reason":"no longer needed"}`, Lacks, "the user the conversation is with"},
	})
}

func TestConfirmed(t *testing.T) {
	said := func(lines ...string) func(t *testing.T) *Session {
		return func(t *testing.T) *Session {
			s := bare(Retail)(t)
			for i, l := range lines {
				role := "assistant"
				if i%2 == 1 {
					role = "user"
				}
				s.Message(role, l)
			}
			return s
		}
	}
	cancel := `{"order_id":"#W1a","reason":"no longer needed"}`
	runRuleCases(t, "retail.confirmed", []ruleCase{
		{"yes", said("Cancel #W1a because it is no longer needed?", "Yes, please."), "cancel_pending_order", cancel, Allow, ""},
		{"go ahead", said("Cancel #W1a?", "Go ahead and cancel it."), "cancel_pending_order", cancel, Allow, ""},
		{"a request, not a yes", said("How can I help?", "Please cancel order #W1a."), "cancel_pending_order", cancel, Refuse, `does not say yes to it: "Please cancel order #W1a."`},
		{"no conversation", bare(Retail), "cancel_pending_order", cancel, Lacks, "--context"},
	})
	s := said("Cancel #W1a?", "Yes.")(t)
	c := s.Check("cancel_pending_order", raw(cancel))
	if c.Confirmation == nil || c.Confirmation.AgentSaid != "Cancel #W1a?" || c.Confirmation.UserSaid != "Yes." {
		t.Errorf("Confirmation %+v: want what the agent said last and the customer's reply", c.Confirmation)
	}
	if v := verdictOf(t, c, "retail.confirmed"); v.Enforced {
		t.Errorf("retail.confirmed is enforced by default; it must be logged only")
	}
}

func TestRefusalText(t *testing.T) {
	s := pending(t)
	c := s.Check("cancel_pending_order", raw(`{"order_id":"#W1a","reason":"found it cheaper"}`))
	want := "Refused by the policy check, so cancel_pending_order was not run and nothing changed: 'found it cheaper' is not an accepted reason (policy check retail.cancel_reason)"
	if got := c.Refusal(); got != want {
		t.Errorf("refusal\n got %q\nwant %q", got, want)
	}
}

func TestReadsAreNotChecked(t *testing.T) {
	c := pending(t).Check("get_order_details", raw(`{"order_id":"#W1a"}`))
	if c.Write || len(c.Verdicts) > 0 || c.Refused != nil {
		t.Errorf("a read was checked: %+v", c)
	}
}

func TestAppendedLookupsAreFacts(t *testing.T) {
	// The agent's result carries a flow's lookups after the banner: the
	// order they show is a fact as much as the agent's own results.
	s := bare(Retail)(t)
	text := "user_1\n--- Also looked up automatically (current results; no need to repeat these calls) ---\n\n" +
		"get_order_details {\"order_id\":\"#W1a\"}:\n" + retailOrderJSON("#W1a", "user_1", "delivered", "credit_card_1")
	s.Result("find_user_id_by_email", raw(`{"email":"c1@example.com"}`), text, false)
	v := verdictOf(t, s.Check("cancel_pending_order", raw(`{"order_id":"#W1a","reason":"no longer needed"}`)), "retail.order_status")
	if v.Outcome != Refuse {
		t.Fatalf("order_status %+v: want a refusal from the appended lookup's order", v)
	}
	if v := verdictOf(t, s.Check("cancel_pending_order", raw(`{"order_id":"#W1a","reason":"no longer needed"}`)), "retail.one_user"); v.Outcome != Allow {
		t.Errorf("one_user %+v: the find_user_id result before the banner identifies user_1", v)
	}
}

func TestModes(t *testing.T) {
	s, err := NewSession(Config{Domain: Retail, Modes: map[string]Mode{"retail.cancel_reason": Log, "retail.order_status": Off}})
	if err != nil {
		t.Fatal(err)
	}
	c := s.Check("cancel_pending_order", raw(`{"order_id":"#W1a","reason":"found it cheaper"}`))
	if c.Refused != nil {
		t.Errorf("a logged rule refused: %+v", c.Refused)
	}
	if v := verdictOf(t, c, "retail.cancel_reason"); v.Outcome != Refuse || v.Enforced {
		t.Errorf("logged cancel_reason %+v: want an unenforced refusal", v)
	}
	for _, v := range c.Verdicts {
		if v.Rule == "retail.order_status" {
			t.Errorf("a rule turned off gave a verdict: %+v", v)
		}
	}
	if _, err := NewSession(Config{Domain: Retail, Modes: map[string]Mode{"airline.baggage": Log}}); err == nil || !strings.Contains(err.Error(), "no rule airline.baggage in domain retail") {
		t.Errorf("a rule of another domain: err %v", err)
	}
	if _, err := NewSession(Config{Domain: "orders"}); err == nil || !strings.Contains(err.Error(), `no guards for domain "orders": want airline or retail`) {
		t.Errorf("an unknown domain: err %v", err)
	}
}

// tau2Simulation is one τ²-bench simulation's messages, as its results
// file holds them.
type tau2Simulation struct {
	ID       string  `json:"id"`
	TaskID   string  `json:"task_id"`
	Reward   float64 `json:"reward"`
	Messages []struct {
		Role      string         `json:"role"`
		Content   *string        `json:"content"`
		ID        string         `json:"id"`
		ToolCalls []tau2ToolCall `json:"tool_calls"`
	} `json:"messages"`
}

type tau2ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"arguments"`
}

// replayTau2 checks each write of a τ²-bench simulation as hoist guards
// does (internal/cli's walkWrites): the messages and results are facts,
// each write is checked before its result. It returns the checks in order.
func replayTau2(t *testing.T, s *Session, path string) []Check {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sim tau2Simulation
	if err := json.Unmarshal(b, &sim); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	calls := map[string]tau2ToolCall{}
	var checks []Check
	for _, m := range sim.Messages {
		text := ""
		if m.Content != nil {
			text = *m.Content
		}
		switch {
		case m.Role == "tool":
			c := calls[m.ID]
			s.Result(c.Name, c.Args, text, strings.HasPrefix(text, "Error:"))
		case len(m.ToolCalls) > 0:
			for _, c := range m.ToolCalls {
				calls[c.ID] = c
				if ck := s.Check(c.Name, c.Args); ck.Write {
					checks = append(checks, ck)
					s.Sent(c.Name, c.Args)
				}
			}
		case text != "":
			s.Message(m.Role, text)
		}
	}
	return checks
}

// An order whose items were modified is "pending (item modified)", and
// τ²-bench still changes its address (its tools take any status with
// "pending" in it for an address); a τ²-bench agent did so, at the
// customer's request, and τ²-bench's task asks for both changes
// (retail task 71's actions). Its payment, its items and a cancellation
// are refused, by the policy ("The agent will not be able to modify or
// cancel the order anymore") and by τ²-bench's tools alike.
func TestRetailOrderStatusItemModifiedTau2(t *testing.T) {
	s, err := NewSession(Config{Domain: Retail})
	if err != nil {
		t.Fatal(err)
	}
	checks := replayTau2(t, s, filepath.Join("testdata", "tau2-retail-item-modified.json"))
	var got []string
	for _, c := range checks {
		v := verdictOf(t, c, "retail.order_status")
		got = append(got, c.Tool+" "+string(v.Outcome)+" "+v.Reason)
	}
	want := []string{
		"modify_pending_order_payment allow ",
		"modify_pending_order_items allow ",
		"modify_pending_order_address allow ",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("retail.order_status over the τ²-bench simulation (-want +got):\n%s", diff)
	}

	// After that simulation the order is "pending (item modified)".
	for _, tc := range []struct {
		tool, args string
		want       Outcome
		says       string
	}{
		{"modify_pending_order_address", `{"order_id":"#W5270061","address1":"1 Elm St","address2":"","city":"Charlotte","state":"NC","country":"USA","zip":"28243"}`, Allow, ""},
		{"modify_pending_order_payment", `{"order_id":"#W5270061","payment_method_id":"gift_card_1711656"}`, Refuse, "its items were modified"},
		{"modify_pending_order_items", `{"order_id":"#W5270061","item_ids":["5917587651"],"new_item_ids":["8054888773"],"payment_method_id":"paypal_7729105"}`, Refuse, "its items were modified"},
		{"cancel_pending_order", `{"order_id":"#W5270061","reason":"no longer needed"}`, Refuse, "its items were modified"},
	} {
		v := verdictOf(t, s.Check(tc.tool, raw(tc.args)), "retail.order_status")
		if v.Outcome != tc.want || !strings.Contains(v.Reason, tc.says) {
			t.Errorf("%s on the item-modified order: %s %q, want %s saying %q", tc.tool, v.Outcome, v.Reason, tc.want, tc.says)
		}
	}
}
