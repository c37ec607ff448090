package episode

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Timeline helpers: call c at t by the agent passing values; the proxy's
// call; c's answer at t returning text; something said; c cancelled.
func call(t int64, c int, values ...string) Step {
	return Step{Kind: StepCall, TMS: t, Call: c, By: Agent, Values: values}
}
func lookup(t int64, c int, values ...string) Step {
	return Step{Kind: StepCall, TMS: t, Call: c, By: Proxy, Values: values}
}
func answer(t int64, c int, text string) Step {
	return Step{Kind: StepAnswer, TMS: t, Call: c, Text: text}
}
func said(t int64, text string) Step { return Step{Kind: StepSaid, TMS: t, Text: text} }
func cancel(t int64, c int) Step     { return Step{Kind: StepCancel, TMS: t, Call: c} }

func TestInferTurns(t *testing.T) {
	tests := []struct {
		name  string
		steps []Step
		want  []int
	}{
		{
			name:  "first call starts a turn",
			steps: []Step{call(0, 0)},
			want:  []int{0},
		},
		// Rule 1: parallel calls.
		{
			name:  "parallel: sent while an earlier call awaits its answer",
			steps: []Step{call(0, 0), call(3, 1), answer(10, 0, "a"), answer(12, 1, "b")},
			want:  []int{0, 0},
		},
		{
			name: "parallel: joins even long after, while the first still awaits",
			steps: []Step{call(0, 0), said(100, "hold on"), call(5000, 1),
				answer(6000, 0, "a"), answer(6001, 1, "b")},
			want: []int{0, 0},
		},
		// Rule 2: the 500 ms rule.
		{
			name:  "500 ms: within the window, nothing said: joins",
			steps: []Step{call(0, 0, "x"), answer(10, 0, "r"), call(400, 1, "y"), answer(410, 1, "s")},
			want:  []int{0, 0},
		},
		{
			name:  "500 ms: exactly 500 ms joins",
			steps: []Step{call(0, 0), answer(10, 0, "r"), call(510, 1)},
			want:  []int{0, 0},
		},
		{
			name:  "500 ms: 501 ms starts a new turn",
			steps: []Step{call(0, 0), answer(10, 0, "r"), call(511, 1)},
			want:  []int{0, 1},
		},
		{
			name:  "500 ms: counted from the turn's last answer",
			steps: []Step{call(0, 0), call(1, 1), answer(10, 0, "a"), answer(400, 1, "b"), call(800, 2)},
			want:  []int{0, 0, 0},
		},
		{
			name:  "500 ms: something said in between starts a new turn",
			steps: []Step{call(0, 0), answer(10, 0, "r"), said(20, "let me check"), call(30, 1)},
			want:  []int{0, 1},
		},
		{
			name:  "500 ms: said before the last answer does not count",
			steps: []Step{call(0, 0), said(5, "while waiting"), answer(10, 0, "r"), call(30, 1)},
			want:  []int{0, 0},
		},
		{
			name: "500 ms: a value that first appeared in the turn's result starts a new turn",
			steps: []Step{call(0, 0, "alice"), answer(10, 0, `{"user":"alice","orders":["#W1"]}`),
				call(100, 1, "#W1")},
			want: []int{0, 1},
		},
		{
			name: "500 ms: a value seen before the turn does not count",
			steps: []Step{said(0, "my order is #W1"), call(10, 0, "alice"),
				answer(20, 0, `{"orders":["#W1"]}`), call(100, 1, "#W1")},
			want: []int{0, 0},
		},
		{
			name: "500 ms: a value from an earlier turn's result does not count",
			steps: []Step{call(0, 0), answer(10, 0, `["#W1","#W2"]`), said(2000, "ok"),
				call(3000, 1, "#W1"), answer(3010, 1, `{"id":"#W1","item":"i9"}`),
				call(3100, 2, "#W2")},
			want: []int{0, 1, 1},
		},
		{
			name: "500 ms: a value the turn's own call passed first does not count",
			steps: []Step{call(0, 0, "#W1"), answer(10, 0, `{"id":"#W1"}`),
				call(100, 1, "#W1")},
			want: []int{0, 0},
		},
		{
			name: "500 ms: the value rule holds for a number as written",
			steps: []Step{call(0, 0, "q"), answer(10, 0, `{"price": 253.89}`),
				call(100, 1, "253.89")},
			want: []int{0, 1},
		},
		{
			name:  "500 ms: a turn with no answer yet cannot be joined by timing",
			steps: []Step{call(0, 0), cancel(5, 0), call(100, 1)},
			want:  []int{0, 1},
		},
		// The proxy's own lookups.
		{
			name: "proxy: a lookup while the agent's call awaits joins",
			steps: []Step{call(0, 0), lookup(20, 1), answer(25, 1, "l"),
				answer(30, 0, "r")},
			want: []int{0, 0},
		},
		{
			name:  "proxy: a lookup after the turn's calls are answered starts a new turn",
			steps: []Step{call(0, 0), answer(10, 0, "r"), lookup(20, 1), answer(25, 1, "l")},
			want:  []int{0, 1},
		},
		{
			name: "proxy: the agent's call after a held answer joins by the 500 ms rule",
			steps: []Step{call(0, 0), lookup(20, 1), answer(25, 1, "l"), answer(30, 0, "r + l"),
				call(300, 2)},
			want: []int{0, 0, 0},
		},
		// Unanswered and cancelled calls.
		{
			name: "unanswered: keeps its turn open, later calls join",
			steps: []Step{call(0, 0), call(1, 1), answer(10, 1, "b"),
				said(2000, "anyone?"), call(9000, 2), answer(9010, 2, "c")},
			want: []int{0, 0, 0},
		},
		{
			name: "cancelled: no longer holds the turn open",
			steps: []Step{call(0, 0), call(1, 1), answer(10, 1, "b"), cancel(1000, 0),
				said(2000, "sorry"), call(9000, 2)},
			want: []int{0, 0, 1},
		},
		{
			name:  "cancelled: an answer after the cancel is not read",
			steps: []Step{call(0, 0), cancel(10, 0), answer(20, 0, "late"), call(100, 1)},
			want:  []int{0, 1},
		},
		// Combinations.
		{
			name: "τ²-like: parallel reads, then a write after the user speaks",
			steps: []Step{said(0, "I am user_7"), call(100, 0, "user_7"), answer(120, 0, `{"orders":["#W7a","#W7b"]}`),
				said(2000, "checking"), call(2001, 1, "#W7a"), call(2002, 2, "#W7b"), answer(2010, 1, "a"), answer(2030, 2, "b"),
				said(5000, "cancel #W7a please"), call(7000, 3, "#W7a", "no longer needed"), answer(7010, 3, "done")},
			want: []int{0, 1, 1, 2},
		},
		{
			name: "streamed reads then a dependent read",
			steps: []Step{call(0, 0, "u1"), answer(10, 0, `{"order":"#W9"}`), call(50, 1, "u1"), answer(60, 1, "x"),
				call(120, 2, "#W9"), answer(130, 2, "y"), call(200, 3, "u1")},
			want: []int{0, 0, 1, 1},
		},
		{
			name: "a lookup joins a parallel turn, and the next agent call waits for all",
			steps: []Step{call(0, 0), call(1, 1), answer(5, 0, "a"), lookup(6, 2), answer(8, 2, "l"),
				answer(700, 1, "b"), call(1300, 3)},
			want: []int{0, 0, 0, 1},
		},
		{
			name:  "steps that name unknown or repeated calls are ignored",
			steps: []Step{answer(1, 7, "x"), cancel(2, 9), call(3, 0), answer(4, 0, "y"), call(5, 0), call(6, 1<<40), call(7, -1)},
			want:  []int{0, -1, -1, -1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := InferTurns(tt.steps)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("turns (-want +got):\n%s", diff)
			}
		})
	}
}

func TestArgValues(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{`{"order_id":"#W1","items":["a","b"],"n":2,"p":1.50,"ok":true,"x":null,"e":""}`,
			[]string{"a", "b", "2", "#W1", "1.50"}},
		{`{"b":{"z":"1"},"a":"0"}`, []string{"0", "1"}},
		{``, nil},
		{`not json`, nil},
		{`"s"`, []string{"s"}},
	}
	for _, tt := range tests {
		got := ArgValues([]byte(tt.in))
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ArgValues(%s) (-want +got):\n%s", tt.in, diff)
		}
	}
}

// TestTextFirstItem checks the memoized search for a value's first
// occurrence against a plain search of everything so far.
func TestTextFirstItem(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"a", "ab", "b", "#W1", "W1", "1", "x y", "user_7"}
	var tx text
	var items []string
	for i := 0; i < 2000; i++ {
		if rng.IntN(2) == 0 {
			s := words[rng.IntN(len(words))] + words[rng.IntN(len(words))]
			tx.add(s, rng.IntN(3)-1)
			items = append(items, s)
			continue
		}
		v := words[rng.IntN(len(words))]
		want := -1
		for j, s := range items {
			if strings.Contains(s, v) {
				want = j
				break
			}
		}
		if got := tx.firstItem(v); got != want {
			t.Fatalf("step %d: firstItem(%q) = %d, want %d", i, v, got, want)
		}
	}
}
