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

// A lookup whose results are large costs more per detour: its threshold is
// scaled by their mean size over DetourBytes, so an offer that passes the
// rule's threshold at the usual size does not at four times it.
func TestCostOfLargeResults(t *testing.T) {
	offer := func(f *Flow) []Offer {
		s, err := NewSession(f, Options{Rule: Rule{Decider: Reach, Threshold: 0.5}, Caps: DefaultCaps})
		if err != nil {
			t.Fatal(err)
		}
		i := s.Call("find_user", []byte(`{"x":"c7@example.com"}`))
		s.Result(i, "user_7", false)
		d := s.Run(i).Next()
		if d.Taken >= 0 {
			return d.Offers[d.Taken : d.Taken+1]
		}
		return nil
	}
	f := shopFlow(t) // get_user after find_user: P(reach) 0.8 × P(binding) 1
	if got := offer(f); len(got) != 1 || got[0].Cost != 0 {
		t.Fatalf("usual size: took %+v", got)
	}
	l := &f.Sites[0].Lookups[0]
	l.Answered, l.Bytes = &Count{N: 8}, &Count{N: 8 * 4 * DetourBytes}
	if got := offer(f); got != nil {
		t.Errorf("results of 16 KiB: took %+v, want none (threshold 0.5 × 4)", got)
	}
	l.Bytes = &Count{N: 8 * DetourBytes * 3 / 2}
	if got := offer(f); len(got) != 1 || got[0].Cost != 1.5 || got[0].Threshold(0.5) != 0.75 {
		t.Errorf("results of 6 KiB: took %+v, want it at threshold 0.75", got)
	}
}

// The default cap, sized by the held-out replay (docs/flow.md, "What each
// lever earned"), keeps a run of the user and both orders of about 5 KiB
// each, as retail's runs of an order's details and its products are: at
// 8 KiB the second order was left out, and 5 retail turns with it.
func TestDefaultMaxBytesKeepsTwoLargeRecords(t *testing.T) {
	s, err := NewSession(shopFlow(t), Options{Rule: Rule{Decider: Reach, Threshold: DefaultThreshold}})
	if err != nil {
		t.Fatal(err)
	}
	ds, _ := serve(t, s, func(o Offer) (string, bool) {
		if o.Tool == "get_order" {
			return `{"order":"` + strings.Repeat("x", 5000) + `"}`, false
		}
		return answerShop(o)
	})
	var orders int
	for _, d := range ds {
		if d.Taken >= 0 && d.Offers[d.Taken].Tool == "get_order" {
			orders++
		}
		if strings.HasPrefix(d.Reason, "over --flow-max-bytes") {
			t.Errorf("default caps: %s", d.Reason)
		}
	}
	if orders != 2 {
		t.Errorf("%d orders looked up, want both", orders)
	}
}
