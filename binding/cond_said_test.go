package binding

import "testing"

// A condition on what the customer said: said "word" holds when the word
// was said as a whole token, in any case.
func TestCondSaidWord(t *testing.T) {
	s := &Scope{}
	s.Said.Add("My flight was Delayed by three hours.")
	s.Add(0, NewResult("get_user_details", `{"user_id":"u1"}`))
	for c, want := range map[string]bool{`said "delayed"`: true, `said "delay"`: false, `said "three"`: true, `said "cancel"`: false} {
		cond, err := ParseCond(c)
		if err != nil {
			t.Errorf("ParseCond(%q): %v", c, err)
			continue
		}
		if got := cond.Holds(s); got != want {
			t.Errorf("%s holds = %v, want %v", c, got, want)
		}
		if cond.String() != c {
			t.Errorf("ParseCond(%q).String() = %q", c, cond.String())
		}
	}
	for _, bad := range []string{`said delayed`, `said ""`, `said 3`} {
		if _, err := ParseCond(bad); err == nil {
			t.Errorf("ParseCond(%q) took it", bad)
		}
	}
	if got := s.Said.Words(2); len(got) != 2 || got[0] != "flight" || got[1] != "delayed" {
		t.Errorf("Words(2) = %q, want flight, delayed", got)
	}
}
