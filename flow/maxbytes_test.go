package flow

import (
	"strings"
	"testing"
)

// The cap on what a run appends: the answer that would pass it is left
// out (Kept false), nothing chains from it, and the decision after it
// ends the run, saying why.
func TestMaxBytes(t *testing.T) {
	f := shopFlow(t)
	// get_user's answer (36 B of text) fits in 80 B; the first order's
	// would pass it.
	s, err := NewSession(f, Options{Rule: Rule{Decider: Reach, Threshold: DefaultThreshold}, Caps: Caps{PerCall: 8, PerSession: 40, MaxBytes: 80}})
	if err != nil {
		t.Fatal(err)
	}
	var kept []bool
	i := s.Call("find_user", []byte(`{"x":"c7@example.com"}`))
	s.Result(i, "user_7", false)
	run := s.Run(i)
	var last Decision
	for n := 0; n < 10; n++ {
		last = run.Next()
		if last.Taken < 0 {
			break
		}
		o := last.Offers[last.Taken]
		text, failed := answerShop(o)
		if o.Tool == "get_order" {
			text = strings.Repeat("x", 40)
		}
		run.Answer(text, failed)
		kept = append(kept, run.Kept())
	}
	run.End()
	if len(kept) != 2 || !kept[0] || kept[1] {
		t.Errorf("kept %v, want the user kept and the first order left out", kept)
	}
	if last.Taken >= 0 || !strings.HasPrefix(last.Reason, "over --flow-max-bytes 80:") {
		t.Errorf("last decision %+v, want a stop over the cap", last)
	}
	if size := AppendedSize("get_user", []byte(`{"x":"user_7"}`), userText); size > 80 {
		t.Fatalf("the test's cap no longer fits the user's answer (%d B)", size)
	}
}
