package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTau2Tools plays the sessions of testdata/tau2/world/golden.jsonl, each
// on a fresh session of the world over the shipped database, and wants
// every answer τ²-bench's own code gave (testdata/tau2/world/make.py ran
// its reference implementation): each tool's read, each write and what a
// later read then returns, and each error, byte for byte.
func TestTau2Tools(t *testing.T) {
	db := shippedDB(t)
	f, err := os.Open(filepath.Join("..", "..", "testdata", "tau2", "world", "golden.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tools := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var s struct {
			Session string `json:"session"`
			Calls   []struct {
				Tool      string         `json:"tool"`
				Arguments map[string]any `json:"arguments"`
				Text      string         `json:"text"`
				IsError   bool           `json:"is_error"`
			} `json:"calls"`
		}
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		t.Run(s.Session, func(t *testing.T) {
			w := NewTau2Retail(db)
			for i, c := range s.Calls {
				tools[c.Tool] = true
				res, known := w.Call(context.Background(), c.Tool, c.Arguments)
				if !known {
					t.Fatalf("call %d: %s is unknown", i, c.Tool)
				}
				text, isError := resultText(res)
				if text != c.Text || isError != c.IsError {
					t.Errorf("call %d: %s %v (-τ²-bench +demo):\n%s", i, c.Tool, c.Arguments, cmp.Diff(c.Text, text))
				}
			}
		})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(tools) != len(tau2Retail) {
		t.Errorf("the golden sessions call %d of the %d tools", len(tools), len(tau2Retail))
	}
}

// TestTau2Sessions checks that each session starts from the database as
// loaded: a write in one is seen by its later reads, never by another
// session, nor by a session started after it.
func TestTau2Sessions(t *testing.T) {
	db := shippedDB(t)
	read := func(w World) string {
		res, _ := w.Call(context.Background(), "get_order_details", map[string]any{"order_id": "#W6779827"})
		text, _ := resultText(res)
		return text
	}
	a := NewTau2Retail(db)
	b := a.NewSession()
	before := read(a)
	res, _ := a.Call(context.Background(), "cancel_pending_order", map[string]any{"order_id": "#W6779827", "reason": "no longer needed"})
	if text, isError := resultText(res); isError {
		t.Fatal(text)
	}
	if after := read(a); !strings.Contains(after, `"status": "cancelled"`) {
		t.Errorf("the session's own read after its cancel: %s", after)
	}
	if got := read(b); got != before {
		t.Errorf("another session sees the cancel: %s", got)
	}
	if got := read(a.NewSession()); got != before {
		t.Errorf("a later session sees the cancel: %s", got)
	}
	if got := read(NewTau2Retail(db)); got != before {
		t.Errorf("the database as loaded changed: %s", got)
	}
}

// TestTau2ToolsListed checks the listing: sixteen tools, by name in order,
// each with the recorded input schema and readOnlyHint of τ²-bench's
// sessions, and every listed tool answered.
func TestTau2ToolsListed(t *testing.T) {
	w := NewTau2Retail(shippedDB(t))
	var got []string
	for _, tool := range w.Tools() {
		m := tool.(map[string]any)
		name := m["name"].(string)
		hint := "none"
		if a, ok := m["annotations"].(map[string]any); ok {
			hint = map[bool]string{true: "read", false: "write"}[a["readOnlyHint"].(bool)]
		}
		got = append(got, name+" "+hint)
		if _, ok := tau2Retail[name]; !ok {
			t.Errorf("%s is listed but not answered", name)
		}
		schema := m["inputSchema"].(map[string]any)
		var want []string
		for _, p := range tau2Retail[name].params {
			want = append(want, p.name)
		}
		var props []string
		for k := range schema["properties"].(map[string]any) {
			props = append(props, k)
		}
		if !cmp.Equal(sortedCopy(props), sortedCopy(want)) {
			t.Errorf("%s: schema properties %v, parameters %v", name, props, want)
		}
	}
	want := []string{
		"calculate none", "cancel_pending_order write", "exchange_delivered_order_items write",
		"find_user_id_by_email read", "find_user_id_by_name_zip read", "get_item_details read",
		"get_order_details read", "get_product_details read", "get_user_details read",
		"list_all_product_types read", "modify_pending_order_address write", "modify_pending_order_items write",
		"modify_pending_order_payment write", "modify_user_address write", "return_delivered_order_items write",
		"transfer_to_human_agents none",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if _, known := w.Call(context.Background(), "lookup", nil); known {
		t.Error("the τ²-bench world answers lookup")
	}
}

// TestTau2ArgumentTypes: τ²-bench does not check types; the world answers
// an argument of the wrong JSON type with an error result naming it.
func TestTau2ArgumentTypes(t *testing.T) {
	w := NewTau2Retail(shippedDB(t))
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"get_order_details", map[string]any{"order_id": 7.0}, "Error: argument order_id: want a string, got a number"},
		{"return_delivered_order_items", map[string]any{"order_id": "#W9077205", "item_ids": "9370300555", "payment_method_id": "gift_card_7108145"}, "Error: argument item_ids: want a list of strings, got a string"},
		{"return_delivered_order_items", map[string]any{"order_id": "#W9077205", "item_ids": []any{nil}, "payment_method_id": "gift_card_7108145"}, "Error: argument item_ids[0]: want a string, got null"},
	} {
		res, _ := w.Call(context.Background(), tc.tool, tc.args)
		if text, isError := resultText(res); text != tc.want || !isError {
			t.Errorf("%s %v: %q (isError %v), want %q", tc.tool, tc.args, text, isError, tc.want)
		}
	}
}

func TestTau2DBErrors(t *testing.T) {
	for _, tc := range []struct {
		name, data, want string
	}{
		{"not JSON", `{"products": `, "db.json: not valid JSON"},
		{"not an object", `[]`, "db.json:1: want an object of products, users and orders"},
		{"missing orders", `{"products": {}, "users": {}}`, "db.json:1: orders: missing"},
		{"bad price", "{\"products\": {\"1\": {\"name\": \"N\", \"product_id\": \"1\", \"variants\": {\"2\": {\"item_id\": \"2\", \"options\": {},\n \"available\": true, \"price\": \"12\"}}}}, \"users\": {}, \"orders\": {}}",
			`db.json:2: products["1"].variants["2"].price: want a number`},
		{"bad payment", `{"products": {}, "users": {"u": {"user_id": "u", "name": {"first_name": "A", "last_name": "B"}, "address": {"address1": "", "address2": "", "city": "", "country": "", "state": "", "zip": ""}, "email": "", "payment_methods": {"p": {"source": "cash", "id": "p"}}, "orders": []}}, "orders": {}}`,
			`db.json:1: users["u"].payment_methods["p"].source: "cash": want credit_card, gift_card or paypal`},
		{"missing field", `{"products": {}, "users": {}, "orders": {"#W1": {"order_id": "#W1"}}}`, `db.json:1: orders["#W1"].address: missing`},
		{"gift card without balance", `{"products": {}, "users": {"u": {"user_id": "u", "name": {"first_name": "A", "last_name": "B"}, "address": {"address1": "", "address2": "", "city": "", "country": "", "state": "", "zip": ""}, "email": "", "payment_methods": {"g": {"source": "gift_card", "id": "g"}}, "orders": []}}, "orders": {}}`,
			`db.json:1: users["u"].payment_methods["g"].balance: missing (a gift_card has one)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTau2DB("db.json", []byte(tc.data))
			if err == nil || err.Error() != tc.want {
				t.Errorf("got %v, want %s", err, tc.want)
			}
		})
	}
}

func TestPyFloat(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{12, "12.0"}, {200.8, "200.8"}, {-23.99, "-23.99"}, {457.3700000000004, "457.3700000000004"},
		{0.0001, "0.0001"}, {0.00001, "1e-05"}, {1e15, "1000000000000000.0"}, {1e16, "1e+16"},
		{1.5e17, "1.5e+17"}, {math.Copysign(0, -1), "-0.0"}, {5.684341886080802e-14, "5.684341886080802e-14"},
	} {
		if got := string(appendPyFloat(nil, tc.f)); got != tc.want {
			t.Errorf("%v: got %s, want %s", tc.f, got, tc.want)
		}
	}
	for _, tc := range []struct{ f, want float64 }{{0.125, 0.12}, {0.375, 0.38}, {2.675, 2.67}, {1262.414, 1262.41}, {-23.995, -24}} {
		if got := pyRound2(tc.f); got != tc.want {
			t.Errorf("round(%v, 2) = %v, want %v", tc.f, got, tc.want)
		}
	}
	if got := string(appendPyString(nil, "a\"b\\c\n\u00e9\U0001F600\x7f")); got != `"a\"b\\c\n\u00e9\ud83d\ude00\u007f"` {
		t.Errorf("string: %s", got)
	}
}

func sortedCopy(s []string) []string { return sorted(s) }
