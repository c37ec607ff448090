package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/binding"
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
)

// additive serves units whose lookups do not interact: taking one adds
// its lookups and hits alone.
func additive(units []unit) func(int) (int, int, func(bool)) {
	return func(u int) (int, int, func(bool)) { return units[u].alone.offers, units[u].alone.hits, func(bool) {} }
}

func unitsAlone(sizes ...[2]int) []unit {
	var out []unit
	for i, s := range sizes {
		out = append(out, unit{key: string(rune('a' + i)), alone: tally{offers: s[0], hits: s[1]}})
	}
	return out
}

func keysOf(units []unit, taken []int) string {
	var b []byte
	for _, u := range taken {
		b = append(b, units[u].key...)
	}
	return string(b)
}

func TestGreedy(t *testing.T) {
	// a: 5 of 10, b: 2 of 2, c: 0 of 3, d: 4 of 5, e: 1 of 2, f: 1 of 3.
	units := unitsAlone([2]int{10, 5}, [2]int{2, 2}, [2]int{3, 0}, [2]int{5, 4}, [2]int{2, 1}, [2]int{3, 1})
	for _, c := range []struct {
		p     float64
		taken string // in the order taken
	}{
		// b, then d (6 of 7, 85.7%); a would make 11 of 17 and is
		// passed over; e makes 7 of 9 (77.8%), below 80%: passed over
		// too.
		{0.85, "bd"},
		// At 75%: b, d, not a (11 of 17, 64.7%), then e (7 of 9, 77.8%),
		// not f (8 of 12, 66.7%).
		{0.75, "bde"},
		// 6 of 7 is exactly 6/7: a floor met exactly is met.
		{6.0 / 7, "bd"},
		// At 0 every unit with a hit, by rate (a before e: more lookups);
		// the one without never.
		{0, "bdaef"},
		{1, "b"},
	} {
		if got := keysOf(units, greedy(units, c.p, additive(units))); got != c.taken {
			t.Errorf("greedy at %.3f took %q, want %q", c.p, got, c.taken)
		}
	}
}

func TestGreedyServed(t *testing.T) {
	// What serving makes is not what each unit makes alone: b alone hits
	// 3 of 3, but served before a it makes 1 detour and no hit (its site
	// is a's answer); after a, 3 of 3. a makes 1 hit of 2. At 50% b is
	// tried first and given back, a is taken, and b on the second pass;
	// at 60% a is not taken, so neither is b.
	units := unitsAlone([2]int{2, 1}, [2]int{3, 3})
	taken := map[string]bool{}
	try := func(u int) (int, int, func(bool)) {
		k := units[u].key
		n, h := 2, 1
		if k == "b" {
			n, h = 1, 0
			if taken["a"] {
				n, h = 3, 3
			}
		}
		taken[k] = true
		return n, h, func(ok bool) {
			if !ok {
				delete(taken, k)
			}
		}
	}
	if got := keysOf(units, greedy(units, 0.5, try)); got != "ab" {
		t.Errorf("at 50%% took %q, want \"ab\"", got)
	}
	clear(taken)
	if got := keysOf(units, greedy(units, 0.6, try)); got != "" || len(taken) != 0 {
		t.Errorf("at 60%% took %q (serving %v), want none", got, taken)
	}
}

func TestUnitsOf(t *testing.T) {
	eps := []*episode.Episode{{ID: "1", AgentModel: "m"}, {ID: "2", AgentModel: "n"}, {ID: "3", AgentModel: "m"}}
	alone := map[string][]tally{
		"x": {{offers: 2, hits: 1}, {offers: 0}, {offers: 3, hits: 3}},
		"y": {{offers: 0}, {offers: 1, hits: 1}, {offers: 0}},
	}
	byModel := unitsOf(alone, eps, func(ep *episode.Episode) string { return ep.AgentModel })
	want := []unit{
		{key: "x", scope: "m", eps: []int{0, 2}, alone: tally{offers: 5, hits: 4}},
		{key: "y", scope: "n", eps: []int{1}, alone: tally{offers: 1, hits: 1}},
	}
	byEpisode := unitsOf(alone, eps, func(ep *episode.Episode) string { return ep.ID })
	// x makes none alone in episode 2: no unit there; y only in 2.
	if len(byEpisode) != 3 || byEpisode[1].scope != "3" || !slices.Equal(byEpisode[1].eps, []int{2}) || byEpisode[2].key != "y" {
		t.Errorf("by episode: %+v", byEpisode)
	}
	all := unitsOf(alone, eps, func(*episode.Episode) string { return "" })
	// Served in every episode, where it makes a lookup alone or not.
	if len(all) != 2 || !slices.Equal(all[1].eps, []int{0, 1, 2}) || all[1].alone != (tally{offers: 1, hits: 1}) {
		t.Errorf("fixed in the flow: %+v", all)
	}
	if len(byModel) != len(want) {
		t.Fatalf("units %+v, want %+v", byModel, want)
	}
	for i := range want {
		if g, w := byModel[i], want[i]; g.key != w.key || g.scope != w.scope || !slices.Equal(g.eps, w.eps) || g.alone != w.alone {
			t.Errorf("unit %d: %+v, want %+v", i, g, w)
		}
	}
}

func TestSavedBy(t *testing.T) {
	// Three turns: one covered by candidate 0, one by 1 and 2 together,
	// one by 2 alone.
	turns := [][]int{{0}, {1, 2}, {2}}
	for _, c := range []struct {
		made []bool
		want int
	}{
		{[]bool{true, true, true}, 3},
		{[]bool{true, false, true}, 2}, // the second turn needs both its calls' lookups
		{[]bool{false, true, false}, 0},
		{[]bool{false, false, false}, 0},
	} {
		if got := savedBy(turns, c.made); got != c.want {
			t.Errorf("savedBy(%v) = %d, want %d", c.made, got, c.want)
		}
	}
}

func TestOnly(t *testing.T) {
	bound := func(exprs ...string) []flow.Bound {
		var out []flow.Bound
		for _, e := range exprs {
			out = append(out, flow.Bound{Args: map[string]binding.Expr{"id": binding.MustParse(e)}})
		}
		return out
	}
	f := &flow.Flow{Sites: []flow.Site{
		{Tool: "a", Lookups: []flow.Lookup{{Tool: "b", Bindings: bound("$result.id", "$result.ids[*]")}, {Tool: "c", Bindings: bound("$result.id")}}},
		{Tool: "d", Lookups: []flow.Lookup{{Tool: "b", Bindings: bound("$result.id")}}},
	}}
	f.Sites[0].Lookups[0].Bindings[1].Narrow = &flow.Narrow{}
	shape := func(g *flow.Flow) string {
		var b strings.Builder
		for _, s := range g.Sites {
			for _, l := range s.Lookups {
				fmt.Fprintf(&b, "%s→%s", s.Tool, l.Tool)
				for _, x := range l.Bindings {
					fmt.Fprintf(&b, " %s", x.Args["id"])
				}
				b.WriteString("; ")
			}
		}
		return b.String()
	}
	for _, c := range []struct {
		name  string
		l     lookups
		keys  []string
		shape string
	}{
		// A lookup of a site is taken whole: its bindings stay the
		// flow's to choose among.
		{"whole", lookups{g: f}, []string{"a\tb"}, "a→b $result.id $result.ids[*]; "},
		// With every binding, one binding of it, by its text or its
		// narrowed text.
		{"binding", lookups{g: boundFlow(f, true), every: true}, []string{"a\tb\tid=$result.ids[*]", "d\tb\tid=$result.id"}, "a→b $result.ids[*]; d→b $result.id; "},
		{"narrowed", lookups{g: boundFlow(f, true), every: true}, []string{"a\tb\tid=$result.ids[said]"}, "a→b $result.ids[*]; "},
		{"none", lookups{g: f}, nil, ""},
	} {
		keys := map[string]bool{}
		for _, k := range c.keys {
			keys[k] = true
		}
		if got := shape(c.l.only(keys)); got != c.shape {
			t.Errorf("%s: %q, want %q", c.name, got, c.shape)
		}
	}
	if got, want := shape(f), "a→b $result.id $result.ids[*]; a→c $result.id; d→b $result.id; "; got != want {
		t.Errorf("the flow itself is now %q, want %q", got, want)
	}
}
