package oracle_test

import (
	"context"
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

func TestMock(t *testing.T) {
	said := "I can cancel order #W1a for the reason 'no longer needed'. Shall I go ahead?"
	call := oracle.Call{Tool: "cancel_pending_order", Arguments: []byte(`{"order_id":"#W1a","reason":"no longer needed"}`)}
	other := oracle.Call{Tool: "cancel_pending_order", Arguments: []byte(`{"order_id":"#W1b","reason":"no longer needed"}`)}
	lookup := func(args string) oracle.Question {
		return oracle.Lookup(oracle.Exchange{Said: said, Reply: "I want to cancel order #W1a"},
			oracle.Call{Tool: "find_user_id_by_email", Arguments: []byte(`{"email":"c1@example.com"}`)},
			oracle.Call{Tool: "get_order_details", Arguments: []byte(args)})
	}
	for _, tc := range []struct {
		name string
		q    oracle.Question
		want float64
	}{
		{"yes", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "Yes"}, call), oracle.MockYes},
		{"go ahead", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "Sure, go ahead!"}, call), oracle.MockYes},
		{"a phrase", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "That sounds good."}, call), oracle.MockYes},
		{"a refusal beside an agreement", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "Yes but don’t cancel yet"}, call), oracle.MockNo},
		{"no", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "No, wait."}, call), oracle.MockNo},
		{"a request is no agreement", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "Cancel my order #W1a"}, call), oracle.MockNo},
		{"a word inside another is not the word", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "Yesterday I ordered"}, call), oracle.MockNo},
		// Negation read in its common forms, not as a word.
		{"why not", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "Yes, why not."}, call), oracle.MockYes},
		{"no problem", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "No problem, go ahead."}, call), oracle.MockYes},
		{"not a problem", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "Sure, that's not a problem."}, call), oracle.MockYes},
		{"no worries", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "Yep, no worries"}, call), oracle.MockYes},
		{"not sure", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "Ok, but I'm not sure."}, call), oracle.MockNo},
		{"do not", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "Yes, do not cancel the other one though"}, call), oracle.MockNo},
		{"not yet", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "Sure, but not yet."}, call), oracle.MockNo},
		{"negated agreement", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "That is not correct."}, call), oracle.MockNo},
		{"proposed: every value said", oracle.Proposed(oracle.Exchange{Said: said, Reply: "yes"}, call), oracle.MockYes},
		{"proposed: a value not said", oracle.Proposed(oracle.Exchange{Said: said, Reply: "yes"}, other), oracle.MockNo},
		{"described: in any case", oracle.Described(oracle.Exchange{Said: strings.ToUpper(said), Reply: "yes"}, call), oracle.MockYes},
		{"lookup: a value the customer named", lookup(`{"order_id":"#W1a"}`), oracle.MockYes},
		{"lookup: nothing named", lookup(`{"order_id":"#W9z"}`), oracle.MockUnsure},
		{"another question", oracle.Question{Kind: "custom", Version: "x/1", Prompt: "yes?"}, oracle.MockUnsure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := oracle.NewMock(model)
			a := m.Ask(context.Background(), tc.q)
			if !a.Answered || a.PYes != tc.want || a.From != oracle.FromMock || a.Cached {
				t.Errorf("mock answered %+v, want p_yes %v", a, tc.want)
			}
			if a.Key != oracle.Key(model, tc.q) {
				t.Errorf("mock key %s, want jev's %s", a.Key, oracle.Key(model, tc.q))
			}
			if b := m.Ask(context.Background(), tc.q); b != a {
				t.Errorf("asked again: %+v, then %+v", a, b)
			}
		})
	}
}

// TestUnaskable: a confirmation question with no customer message is
// answered by no mode, so a judge without the conversation refuses
// nothing.
func TestUnaskable(t *testing.T) {
	s := newSetup(t)
	q := oracle.Confirmation(oracle.Exchange{Said: "Shall I?"}, oracle.Call{Tool: "cancel_pending_order"})
	for name, o := range map[string]oracle.Oracle{
		"jev": s.jev, "replay": oracle.NewReplay(model, s.cache), "mock": oracle.NewMock(model),
	} {
		a := o.Ask(context.Background(), q)
		if a.Answered || a.Why != oracle.Unaskable || !strings.Contains(a.Reason, "no customer message") || a.Key == "" {
			t.Errorf("%s: %+v, want unaskable", name, a)
		}
	}
	if n := len(s.srv.Requests()); n != 0 {
		t.Errorf("the server got %d requests", n)
	}
}

func TestCallShownPlain(t *testing.T) {
	q := oracle.Lookup(oracle.Exchange{}, oracle.Call{Tool: "search", Arguments: []byte(`{"q":"salt & <pepper>"}`)}, oracle.Call{Tool: "b"})
	if !strings.Contains(q.Prompt, `search {"q":"salt & <pepper>"}`) {
		t.Errorf("the call's arguments are not shown as written:\n%s", q.Prompt)
	}
}
