package learn

import (
	"fmt"
	"testing"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
)

// Learn binds a search to the date the customer said in words (issue 26,
// lever 4): "May 22" is the searched 2024-05-22, its year the session's.
func TestLearnWordDates(t *testing.T) {
	months := []string{"January", "February", "March", "April", "May", "June"}
	var eps []*episode.Episode
	for n := 1; n <= 30; n++ {
		m, d := n%6, 1+n%28
		said := fmt.Sprintf("I want to fly on %s %d.", months[m], d)
		if n%2 == 0 {
			said = fmt.Sprintf("Can you look for the %dth of %s?", d, months[m])
		}
		date := fmt.Sprintf("2024-%02d-%02d", m+1, d)
		ep := crafted(fmt.Sprint(n), fmt.Sprint(n),
			call{tool: "get_user", args: fmt.Sprintf(`{"user_id":"u%d"}`, n), result: fmt.Sprintf(`{"user_id":"u%d","since":"2024-01-%02d"}`, n, 1+n%9)},
			call{tool: "search", args: fmt.Sprintf(`{"zip":%q}`, date), result: `{}`, turn: 1},
			call{tool: "cancel", args: `{"order_id":"#W1"}`, result: `ok`, turn: 2})
		ep.Events = append([]episode.Event{{Type: episode.EventMessage, Message: &episode.Message{Role: "user", Text: said}}}, ep.Events...)
		eps = append(eps, ep)
	}
	const want = `zip=$said["9999-99-99"][-1]`
	has := func(f *flow.Flow) bool {
		l := lookup(t, f, "get_user", "search")
		if l == nil {
			return false
		}
		for _, b := range l.Bindings {
			if flow.BindingString(b.Args) == want {
				return true
			}
		}
		return false
	}
	if f := learnAll(Options{Folds: 3, MinSupport: 2}, eps...); has(f) || f.Learned.WordDates {
		t.Errorf("%s learned without dates in words (the default); learned.word_dates %v", want, f.Learned.WordDates)
	}
	f := learnAll(Options{Folds: 3, MinSupport: 2, WordDates: true}, eps...)
	if !has(f) || !f.Learned.WordDates {
		t.Fatalf("no %s after get_user with WordDates; learned.word_dates %v", want, f.Learned.WordDates)
	}
	// The flow says how it was learned, and is served so: its search is
	// made with the date said in words; served as if learned without, it
	// binds nothing.
	searched := func(f *flow.Flow) int {
		n := 0
		for _, ep := range eps[:6] {
			r := flow.ReplayEpisode(f, ep, flow.ReplayOptions{Rule: flow.Rule{Decider: flow.Reach, Threshold: 0.01}, Caps: flow.DefaultCaps})
			for _, lk := range r.Lookups {
				if lk.From == "get_user" && lk.Hit {
					n++
				}
			}
		}
		return n
	}
	if n := searched(f); n != 6 {
		t.Errorf("served with learned.word_dates: %d of 6 searches made", n)
	}
	f.Learned.WordDates = false
	if n := searched(f); n != 0 {
		t.Errorf("served without learned.word_dates: %d of 6 searches made, want none", n)
	}
}
