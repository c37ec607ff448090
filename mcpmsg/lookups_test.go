package mcpmsg

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLookupsRoundTrip(t *testing.T) {
	ls := []Lookup{
		{Tool: "get_user_details", Args: json.RawMessage(`{"user_id":"user_7"}`), Text: `{"user_id": "user_7", "orders": ["#W7a", "#W7b"]}`},
		{Tool: "note", Args: json.RawMessage(`{}`), Text: "line one\n\nline three, after a blank line\nnot_a_header {\"a\":1}:"},
		{Tool: "empty", Args: json.RawMessage(`{"n":12345678901234567890}`), Text: ""},
		{Tool: "get_order_details", Args: json.RawMessage(`{"order_id":"#W7a"}`), Text: "Error: Order not found"},
	}
	text := FormatLookups(ls)
	if !strings.HasPrefix(text, Banner+"\n\nget_user_details {\"user_id\":\"user_7\"}:\n{\"user_id\": \"user_7\"") {
		t.Errorf("format:\n%s", text)
	}
	got, ok := ParseLookups(text)
	if !ok {
		t.Fatal("ParseLookups does not see the item")
	}
	if diff := cmp.Diff(ls, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestParseLookups(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		want []Lookup
		ok   bool
	}{
		{"not the item", `{"user_id": "user_7"}`, nil, false},
		{"the manual's example", Banner + "\n\nget_user_details {\"user_id\":\"user_7\"}:\n{\"user_id\":\"user_7\",\"orders\":[\"#W7a\",\"#W7b\"]}",
			[]Lookup{{Tool: "get_user_details", Args: json.RawMessage(`{"user_id":"user_7"}`), Text: `{"user_id":"user_7","orders":["#W7a","#W7b"]}`}}, true},
		{"CRLF, spaced and unsorted arguments", Banner + "\r\n\r\nt {\"b\": 1, \"a\": \"x\"}:\r\nanswer\r\n",
			[]Lookup{{Tool: "t", Args: json.RawMessage(`{"a":"x","b":1}`), Text: "answer"}}, true},
		{"no lookups", Banner + "\n", nil, true},
		{"a header inside a text needs a blank line before it", Banner + "\n\nt {}:\nx\nu {}:\ny",
			[]Lookup{{Tool: "t", Args: json.RawMessage(`{}`), Text: "x\nu {}:\ny"}}, true},
		{"arguments that are not an object", Banner + "\n\nt [1]:\nx",
			nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseLookups(tc.text)
			if ok != tc.ok || !cmp.Equal(got, tc.want) {
				t.Errorf("got %+v %v, want %+v %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
