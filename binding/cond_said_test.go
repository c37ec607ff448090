package binding

import "testing"

// A condition on what the customer said: said "word" holds when the word
// was said as a whole token, in any case.
func TestCondSaidWord(t *testing.T) {
	s := &Scope{}
	s.Said.Add("My flight was Delayed by three hours.")
	s.Add(0, NewResult("get_user_details", `{"user_id":"u1"}`))
	checkConds(t, s, map[string]bool{`said "delayed"`: true, `said "delay"`: false, `said "three"`: true, `said "cancel"`: false})
	for _, bad := range []string{`said delayed`, `said ""`, `said 3`} {
		if _, err := ParseCond(bad); err == nil {
			t.Errorf("ParseCond(%q) took it", bad)
		}
	}
	if got := s.Said.Words(2); len(got) != 2 || got[0] != "flight" || got[1] != "delayed" {
		t.Errorf("Words(2) = %q, want flight, delayed", got)
	}
}

// The agent's words are its own: agent said "word" holds when the agent
// said the word since the customer's last message (Scope.Hear), and said
// "word" does not read them.
func TestCondAgentSaidWord(t *testing.T) {
	s := &Scope{}
	s.Hear("user", "I want to change my flight.")
	s.Hear("assistant", "Let me pull up your account details.")
	s.Add(0, NewResult("get_user_details", `{"user_id":"u1"}`))
	checkConds(t, s, map[string]bool{`agent said "account"`: true, `said "account"`: false, `agent said "change"`: false, `said "change"`: true})
	// The customer's next message ends the agent's window.
	s.Hear("user", "Thanks.")
	if MustParseCond(`agent said "account"`).Holds(s) {
		t.Error(`agent said "account" holds after the customer spoke again`)
	}
	s.Hear("assistant", "Checking the ACCOUNT now")
	if !MustParseCond(`agent said "account"`).Holds(s) {
		t.Error(`agent said "account" does not hold after the agent said it again`)
	}
	if got := s.Agent.Words(4); len(got) != 2 || got[0] != "checking" || got[1] != "account" {
		t.Errorf("Agent.Words(4) = %q, want checking, account", got)
	}
	for _, bad := range []string{`agent said account`, `agent said ""`, `agent "x"`} {
		if _, err := ParseCond(bad); err == nil {
			t.Errorf("ParseCond(%q) took it", bad)
		}
	}
}
