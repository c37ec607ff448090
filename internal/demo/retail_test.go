package demo

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// call runs one tools/call on r and returns its text and isError.
func call(t *testing.T, r *Retail, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, known := r.Call(context.Background(), name, args)
	if !known {
		t.Fatalf("%s: unknown tool", name)
	}
	m := res.(map[string]any)
	content := m["content"].([]any)
	if len(content) != 1 {
		t.Fatalf("%s: %d content items, want 1", name, len(content))
	}
	return content[0].(map[string]any)["text"].(string), m["isError"].(bool)
}

func TestRetailAnswers(t *testing.T) {
	r := NewRetail(DefaultRetailUsers)
	for _, tc := range []struct {
		name    string
		tool    string
		args    map[string]any
		want    string // the text, or for JSON a member to check below
		isError bool
	}{
		{"email", "find_user_id_by_email", map[string]any{"email": "c7@example.com"}, "user_7", false},
		{"email case", "find_user_id_by_email", map[string]any{"email": "C20@Example.com"}, "user_20", false},
		{"unknown email", "find_user_id_by_email", map[string]any{"email": "c21@example.com"}, "Error: User not found", true},
		{"missing email", "find_user_id_by_email", map[string]any{}, "Error: missing argument email", true},
		{"email not a string", "find_user_id_by_email", map[string]any{"email": 7.0}, "Error: argument email must be a string", true},
		{"unknown user", "get_user_details", map[string]any{"user_id": "user_0"}, "Error: User not found", true},
		{"unknown order", "get_order_details", map[string]any{"order_id": "#W7c"}, "Error: Order not found", true},
		{"bad reason", "cancel_pending_order", map[string]any{"order_id": "#W7a", "reason": "found it cheaper"}, "Error: Invalid reason", true},
		{"cancel unknown", "cancel_pending_order", map[string]any{"order_id": "#W0a", "reason": "no longer needed"}, "Error: Order not found", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, isError := call(t, r, tc.tool, tc.args)
			if text != tc.want || isError != tc.isError {
				t.Errorf("got %q (isError %v), want %q (isError %v)", text, isError, tc.want, tc.isError)
			}
		})
	}
	if _, known := r.Call(context.Background(), "lookup", nil); known {
		t.Error("the retail world answers lookup; it should not list it")
	}
}

func TestRetailUserAndOrders(t *testing.T) {
	r := NewRetail(DefaultRetailUsers)
	for n := 1; n <= DefaultRetailUsers; n++ {
		text, isError := call(t, r, "get_user_details", map[string]any{"user_id": "user_" + itoa(n)})
		if isError {
			t.Fatalf("user_%d: %s", n, text)
		}
		var u struct {
			UserID string   `json:"user_id"`
			Email  string   `json:"email"`
			Orders []string `json:"orders"`
		}
		if err := json.Unmarshal([]byte(text), &u); err != nil {
			t.Fatalf("user_%d: %v", n, err)
		}
		want := []string{"#W" + itoa(n) + "a", "#W" + itoa(n) + "b"}
		if u.UserID != "user_"+itoa(n) || u.Email != "c"+itoa(n)+"@example.com" || !cmp.Equal(u.Orders, want) {
			t.Errorf("user_%d: got %+v", n, u)
		}
		for _, oid := range u.Orders {
			text, isError := call(t, r, "get_order_details", map[string]any{"order_id": oid})
			var o struct {
				OrderID string `json:"order_id"`
				UserID  string `json:"user_id"`
				Status  string `json:"status"`
				Items   []struct {
					ItemID string `json:"item_id"`
				} `json:"items"`
			}
			if err := json.Unmarshal([]byte(text), &o); err != nil || isError {
				t.Fatalf("%s: %v %s", oid, err, text)
			}
			if o.OrderID != oid || o.UserID != u.UserID || o.Status != "pending" || len(o.Items) == 0 {
				t.Errorf("%s: got %+v", oid, o)
			}
		}
	}
}

func TestRetailCancel(t *testing.T) {
	r := NewRetail(DefaultRetailUsers)
	before, _ := call(t, r, "get_order_details", map[string]any{"order_id": "#W3b"})
	text, isError := call(t, r, "cancel_pending_order", map[string]any{"order_id": "#W3b", "reason": "ordered by mistake"})
	if isError {
		t.Fatal(text)
	}
	after, _ := call(t, r, "get_order_details", map[string]any{"order_id": "#W3b"})
	if after != text {
		t.Errorf("get_order_details after the cancel differs from the cancel's answer:\n%s\n%s", after, text)
	}
	var o struct {
		Status         string  `json:"status"`
		CancelReason   *string `json:"cancel_reason"`
		PaymentHistory []struct {
			TransactionType string  `json:"transaction_type"`
			Amount          float64 `json:"amount"`
		} `json:"payment_history"`
	}
	if err := json.Unmarshal([]byte(after), &o); err != nil {
		t.Fatal(err)
	}
	if o.Status != "cancelled" || o.CancelReason == nil || *o.CancelReason != "ordered by mistake" ||
		len(o.PaymentHistory) != 2 || o.PaymentHistory[1].TransactionType != "refund" || o.PaymentHistory[1].Amount != o.PaymentHistory[0].Amount {
		t.Errorf("after the cancel: %+v", o)
	}
	if before == after {
		t.Error("the cancel changed nothing")
	}
	if text, _ := call(t, r, "cancel_pending_order", map[string]any{"order_id": "#W3b", "reason": "ordered by mistake"}); text != "Error: Non-pending order cannot be cancelled" {
		t.Errorf("second cancel: %s", text)
	}
	if other, _ := call(t, r, "get_order_details", map[string]any{"order_id": "#W3a"}); other == after {
		t.Error("the other order changed too")
	}
	fresh, _ := call(t, NewRetail(DefaultRetailUsers), "get_order_details", map[string]any{"order_id": "#W3b"})
	if fresh != before {
		t.Error("a new shop does not start from the same data")
	}
}

// TestRetailJSONStyle checks that answers are written as τ²-bench's are,
// with Python's separators and floats with a decimal point.
func TestRetailJSONStyle(t *testing.T) {
	r := NewRetail(3)
	text, _ := call(t, r, "get_user_details", map[string]any{"user_id": "user_3"})
	want := `{"user_id": "user_3", "name": {"first_name": "Noah", "last_name": "Sanchez"}, "address": {"address1": "121 Cedar Avenue", "address2": "Suite 203", "city": "Austin", "country": "USA", "state": "TX", "zip": "78701"}, "email": "c3@example.com", "payment_methods": {"gift_card_1000003": {"source": "gift_card", "id": "gift_card_1000003", "balance": 30.5}, "paypal_1000003": {"source": "paypal", "id": "paypal_1000003"}}, "orders": ["#W3a", "#W3b"]}`
	if diff := cmp.Diff(want, text); diff != "" {
		t.Errorf("user_3 (-want +got):\n%s", diff)
	}
	for _, tc := range []struct{ in, want string }{
		{`{"a":1,"b":[1,2],"c":"x, y: z\"q,"}`, `{"a": 1, "b": [1, 2], "c": "x, y: z\"q,"}`},
		{`"\\"`, `"\\"`},
	} {
		if got := string(pythonSeparators([]byte(tc.in))); got != tc.want {
			t.Errorf("pythonSeparators(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct {
		in   jsonFloat
		want string
	}{{12, "12.0"}, {54.04, "54.04"}, {0.5, "0.5"}} {
		if b, _ := tc.in.MarshalJSON(); string(b) != tc.want {
			t.Errorf("jsonFloat(%v) = %s, want %s", float64(tc.in), b, tc.want)
		}
	}
}

// TestRetailToolsAreTau2s checks the tools against τ²-bench's own list
// (../shared/data/tau2/tools.json, when it is there): same names, input
// schemas, and readOnlyHint from each tool's kind.
func TestRetailToolsAreTau2s(t *testing.T) {
	path := filepath.Join("..", "..", "..", "shared", "data", "tau2", "tools.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("τ²-bench tools not here: %v", err)
	}
	var tau2 struct {
		Domains map[string]map[string]struct {
			Kind        string          `json:"kind"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"domains"`
	}
	if err := json.Unmarshal(b, &tau2); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range NewRetail(1).Tools() {
		m := tool.(map[string]any)
		name := m["name"].(string)
		names = append(names, name)
		want, ok := tau2.Domains["retail"][name]
		if !ok {
			t.Errorf("%s is not a τ²-bench retail tool", name)
			continue
		}
		var wantSchema any
		json.Unmarshal(want.InputSchema, &wantSchema)
		if diff := cmp.Diff(wantSchema, m["inputSchema"]); diff != "" {
			t.Errorf("%s input schema (-τ² +demo):\n%s", name, diff)
		}
		ro := m["annotations"].(map[string]any)["readOnlyHint"]
		if ro != (want.Kind == "read") {
			t.Errorf("%s: readOnlyHint %v, but τ²-bench's kind is %s", name, ro, want.Kind)
		}
	}
	sort.Strings(names)
	if want := []string{"cancel_pending_order", "find_user_id_by_email", "get_order_details", "get_user_details", "modify_pending_order_payment"}; !cmp.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
}

func TestRetailModifyPayment(t *testing.T) {
	r := NewRetail(DefaultRetailUsers)
	modify := func(order, pm string) (string, bool) {
		return call(t, r, "modify_pending_order_payment", map[string]any{"order_id": order, "payment_method_id": pm})
	}
	for _, tc := range []struct{ name, order, pm, want string }{
		{"not the user's", "#W1a", "paypal_1000002", "Error: Payment method not found"},
		{"the same method", "#W1a", "credit_card_1000001", "Error: The new payment method should be different from the current one"},
		{"a gift card too small", "#W1a", "gift_card_2000001", "Error: Insufficient gift card balance to pay for the order"},
		{"an unknown order", "#W0a", "paypal_1000001", "Error: Order not found"},
	} {
		if text, isError := modify(tc.order, tc.pm); text != tc.want || !isError {
			t.Errorf("%s: %q (isError %v), want %q", tc.name, text, isError, tc.want)
		}
	}
	text, isError := modify("#W1a", "paypal_1000001")
	if isError {
		t.Fatal(text)
	}
	var o struct {
		Status         string `json:"status"`
		PaymentHistory []struct {
			TransactionType string `json:"transaction_type"`
			PaymentMethodID string `json:"payment_method_id"`
		} `json:"payment_history"`
	}
	if err := json.Unmarshal([]byte(text), &o); err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, p := range o.PaymentHistory {
		got = append(got, p.TransactionType+" "+p.PaymentMethodID)
	}
	if want := []string{"payment credit_card_1000001", "payment paypal_1000001", "refund credit_card_1000001"}; o.Status != "pending" || !cmp.Equal(got, want) {
		t.Errorf("after the change: status %s, payments %v, want pending, %v", o.Status, got, want)
	}
	if text, _ := modify("#W1a", "credit_card_1000001"); text != "Error: There should be exactly one payment for a pending order" {
		t.Errorf("a second change: %s", text)
	}
	// A gift card that pays is charged, and refunded when another pays.
	call(t, r, "modify_pending_order_payment", map[string]any{"order_id": "#W6a", "payment_method_id": "paypal_1000006"})
	user, _ := call(t, r, "get_user_details", map[string]any{"user_id": "user_6"})
	order, _ := call(t, r, "get_order_details", map[string]any{"order_id": "#W6a"})
	var u struct {
		PaymentMethods map[string]struct {
			Balance float64 `json:"balance"`
		} `json:"payment_methods"`
	}
	var paid struct {
		PaymentHistory []struct {
			Amount float64 `json:"amount"`
		} `json:"payment_history"`
	}
	json.Unmarshal([]byte(user), &u)
	json.Unmarshal([]byte(order), &paid)
	if want := 60.5 + paid.PaymentHistory[0].Amount; u.PaymentMethods["gift_card_1000006"].Balance != want {
		t.Errorf("gift card balance %v after its refund, want %v", u.PaymentMethods["gift_card_1000006"].Balance, want)
	}
}

func TestRetailJournal(t *testing.T) {
	var b strings.Builder
	r := NewRetail(2)
	r.Journal = &b
	call(t, r, "get_order_details", map[string]any{"order_id": "#W1a"})
	call(t, r, "cancel_pending_order", map[string]any{"order_id": "#W1a", "reason": "no longer needed"})
	want := `{"arguments":{"order_id":"#W1a"},"tool":"get_order_details"}` + "\n" +
		`{"arguments":{"order_id":"#W1a","reason":"no longer needed"},"tool":"cancel_pending_order"}` + "\n"
	if b.String() != want {
		t.Errorf("journal\n%s\nwant\n%s", b.String(), want)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
