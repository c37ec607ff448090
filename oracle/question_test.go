package oracle_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hoist-mcp/hoist/oracle"
)

func TestLastExchange(t *testing.T) {
	u := func(s string) oracle.Message { return oracle.Message{Role: "user", Content: s} }
	a := func(s string) oracle.Message { return oracle.Message{Role: "assistant", Content: s} }
	for _, tc := range []struct {
		name string
		conv []oracle.Message
		want oracle.Exchange
	}{
		{"empty", nil, oracle.Exchange{}},
		{"the usual", []oracle.Message{u("cancel #W1a"), a("Cancel #W1a, reason 'no longer needed'?"), u("yes")},
			oracle.Exchange{Said: "Cancel #W1a, reason 'no longer needed'?", Reply: "yes"}},
		{"what the agent said after the reply is not part of it", []oracle.Message{a("Shall I?"), u("yes"), a("Cancelling now.")},
			oracle.Exchange{Said: "Shall I?", Reply: "yes"}},
		{"an empty agent message is passed over", []oracle.Message{a("Shall I?"), a(" "), u("go ahead")},
			oracle.Exchange{Said: "Shall I?", Reply: "go ahead"}},
		{"no agent words before the reply", []oracle.Message{u("cancel #W1a please")},
			oracle.Exchange{Reply: "cancel #W1a please"}},
		{"no customer message", []oracle.Message{a("Hello")}, oracle.Exchange{}},
		{"other roles", []oracle.Message{a("Shall I?"), {Role: "tool", Content: "{}"}, u("yes"), {Role: "system", Content: "x"}},
			oracle.Exchange{Said: "Shall I?", Reply: "yes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, oracle.LastExchange(tc.conv)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestQuestions(t *testing.T) {
	x := oracle.Exchange{Said: "I will cancel #W1a. Confirm?", Reply: "Yes, do it."}
	call := oracle.Call{Tool: "cancel_pending_order", Arguments: []byte(` {"reason": "no longer needed", "order_id": "#W1a"}`)}
	for _, tc := range []struct {
		q       oracle.Question
		kind    oracle.Kind
		version string
		ask     string
	}{
		{oracle.Confirmation(x, call), oracle.KindConfirm, "confirm/1", "explicitly agree to this exact change"},
		{oracle.Proposed(x, call), oracle.KindProposed, "proposed/1", "proposed this change"},
		{oracle.Described(x, call), oracle.KindDescribed, "described/1", "described this exact change, with every detail"},
	} {
		if tc.q.Kind != tc.kind || tc.q.Version != tc.version {
			t.Errorf("%s: kind %s version %s", tc.kind, tc.q.Kind, tc.q.Version)
		}
		for _, part := range []string{x.Said, x.Reply, `cancel_pending_order {"order_id":"#W1a","reason":"no longer needed"}`, tc.ask} {
			if !strings.Contains(tc.q.Prompt, part) {
				t.Errorf("%s: the prompt lacks %q:\n%s", tc.kind, part, tc.q.Prompt)
			}
		}
		if !strings.Contains(tc.q.System, "yes or no") {
			t.Errorf("%s: system %q", tc.kind, tc.q.System)
		}
	}
	lk := oracle.Lookup(x, oracle.Call{Tool: "get_order_details", Arguments: []byte(`{"order_id":"#W1a"}`)},
		oracle.Call{Tool: "get_user_details", Arguments: []byte(`{"user_id":"user_1"}`)})
	for _, part := range []string{x.Said, x.Reply, `get_order_details {"order_id":"#W1a"}`, `get_user_details {"user_id":"user_1"}`, "before it changes anything"} {
		if !strings.Contains(lk.Prompt, part) {
			t.Errorf("lookup: the prompt lacks %q:\n%s", part, lk.Prompt)
		}
	}
	if lk.Kind != oracle.KindLookup || lk.Version != "lookup/1" {
		t.Errorf("lookup: kind %s version %s", lk.Kind, lk.Version)
	}
	// With no conversation, the flow's question shows only the calls.
	bare := oracle.Lookup(oracle.Exchange{}, oracle.Call{Tool: "a"}, oracle.Call{Tool: "b"})
	if strings.Contains(bare.Prompt, "customer said") || !strings.Contains(bare.Prompt, "a {}\n") {
		t.Errorf("bare lookup prompt:\n%s", bare.Prompt)
	}
}

// TestPromptsPinned pins each prompt's key. A change of a prompt's words
// fails here: give it a new version (VersionConfirm, …), so that no answer
// cached for the old words is read as the answer to the new ones, and
// update the keys.
func TestPromptsPinned(t *testing.T) {
	x := oracle.Exchange{Said: "Cancel #W1a?", Reply: "yes"}
	call := oracle.Call{Tool: "cancel_pending_order", Arguments: []byte(`{"order_id":"#W1a"}`)}
	got := map[string]string{
		"confirm":   oracle.Key("m", oracle.Confirmation(x, call)),
		"proposed":  oracle.Key("m", oracle.Proposed(x, call)),
		"described": oracle.Key("m", oracle.Described(x, call)),
		"lookup":    oracle.Key("m", oracle.Lookup(x, call, call)),
	}
	want := map[string]string{
		"confirm":   "c63f2372943f700ee4ce9427ba45b2f5b409c7b645274b451195122b53527ba3",
		"proposed":  "babd807dc494296b7c6fc1289e07cd9ab1278f3f43085cd4b57a5e08260ea4c3",
		"described": "d23fecbb11e9d43dc114506d189361650569489bb725d82ab4c620b223d2f91c",
		"lookup":    "dace2330a8563440297909cd56dfd7f180bd278c9565882363823a812a95a8b2",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a prompt changed: give it a new version, then update the keys (-want +got):\n%s", diff)
	}
}

func TestKeys(t *testing.T) {
	x := oracle.Exchange{Said: "Cancel #W1a?", Reply: "yes"}
	q := func(args string) oracle.Question {
		return oracle.Confirmation(x, oracle.Call{Tool: "cancel_pending_order", Arguments: []byte(args)})
	}
	base := oracle.Key(model, q(`{"order_id":"#W1a","reason":"no longer needed"}`))
	if len(base) != 64 || strings.Trim(base, "0123456789abcdef") != "" {
		t.Fatalf("key %q: want 64 hex digits", base)
	}
	if k := oracle.Key(model, q(`{ "reason" : "no longer needed", "order_id":"#W1a" }`)); k != base {
		t.Errorf("the same arguments spelled otherwise get another key")
	}
	versioned := q(`{"order_id":"#W1a","reason":"no longer needed"}`)
	versioned.Version = "confirm/2"
	for name, k := range map[string]string{
		"another model":    oracle.Key(model+"-2", q(`{"order_id":"#W1a","reason":"no longer needed"}`)),
		"another argument": oracle.Key(model, q(`{"order_id":"#W1b","reason":"no longer needed"}`)),
		"another reply":    oracle.Key(model, oracle.Confirmation(oracle.Exchange{Said: x.Said, Reply: "no"}, oracle.Call{Tool: "cancel_pending_order", Arguments: []byte(`{"order_id":"#W1a","reason":"no longer needed"}`)})),
		"another version":  oracle.Key(model, versioned),
		"another question": oracle.Key(model, oracle.Proposed(x, oracle.Call{Tool: "cancel_pending_order", Arguments: []byte(`{"order_id":"#W1a","reason":"no longer needed"}`)})),
	} {
		if k == base {
			t.Errorf("%s: the same key", name)
		}
	}
}

func TestLongTextsClipped(t *testing.T) {
	long := strings.Repeat("a", 3000) + "MIDDLE" + strings.Repeat("z", 3000)
	q := oracle.Confirmation(oracle.Exchange{Said: long, Reply: "yes"}, oracle.Call{Tool: "t", Arguments: []byte(`{}`)})
	if strings.Contains(q.Prompt, "MIDDLE") || !strings.Contains(q.Prompt, "aaaa […] zzzz") || len(q.Prompt) > 5000 {
		t.Errorf("a long message was not clipped to its head and tail (%d bytes)", len(q.Prompt))
	}
}

func TestCallShownPlain(t *testing.T) {
	q := oracle.Lookup(oracle.Exchange{}, oracle.Call{Tool: "search", Arguments: []byte(`{"q":"salt & <pepper>"}`)}, oracle.Call{Tool: "b"})
	if !strings.Contains(q.Prompt, `search {"q":"salt & <pepper>"}`) {
		t.Errorf("the call's arguments are not shown as written:\n%s", q.Prompt)
	}
}
