package client_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/oracle"
	"github.com/hoist-mcp/hoist/oracle/client"
)

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
		{"yes", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "Yes"}, call), client.MockYes},
		{"go ahead", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "Sure, go ahead!"}, call), client.MockYes},
		{"a phrase", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "That sounds good."}, call), client.MockYes},
		{"a refusal beside an agreement", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "Yes but don’t cancel yet"}, call), client.MockNo},
		{"no", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "No, wait."}, call), client.MockNo},
		{"a request is no agreement", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "Cancel my order #W1a"}, call), client.MockNo},
		{"a word inside another is not the word", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "Yesterday I ordered"}, call), client.MockNo},
		// Negation read in its common forms, not as a word.
		{"why not", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "Yes, why not."}, call), client.MockYes},
		{"no problem", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "No problem, go ahead."}, call), client.MockYes},
		{"not a problem", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "Sure, that's not a problem."}, call), client.MockYes},
		{"no worries", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "Yep, no worries"}, call), client.MockYes},
		{"not sure", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "Ok, but I'm not sure."}, call), client.MockNo},
		{"do not", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "Yes, do not cancel the other one though"}, call), client.MockNo},
		{"not yet", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "Sure, but not yet."}, call), client.MockNo},
		{"negated agreement", oracle.Confirmation(oracle.Exchange{Said: said, Reply: "That is not correct."}, call), client.MockNo},
		{"proposed: every value said", oracle.Proposed(oracle.Exchange{Said: said, Reply: "yes"}, call), client.MockYes},
		{"proposed: a value not said", oracle.Proposed(oracle.Exchange{Said: said, Reply: "yes"}, other), client.MockNo},
		{"described: in any case", oracle.Described(oracle.Exchange{Said: strings.ToUpper(said), Reply: "yes"}, call), client.MockYes},
		{"lookup: a value the customer named", lookup(`{"order_id":"#W1a"}`), client.MockYes},
		{"lookup: nothing named", lookup(`{"order_id":"#W9z"}`), client.MockUnsure},
		{"another question", oracle.Question{Kind: "custom", Version: "x/1", Prompt: "yes?"}, client.MockUnsure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := client.NewMock(model)
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
		"jev": s.jev, "replay": client.NewReplay(model, s.cache), "mock": client.NewMock(model),
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
