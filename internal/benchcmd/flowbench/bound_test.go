package main

import (
	"slices"
	"testing"
)

// choiceOf makes a choice of groups of candidates numbered in order, each
// group's offers candidates the first hits of which hit, none chained.
func choiceOf(sizes ...[2]int) *choice {
	ch := &choice{}
	for i, s := range sizes {
		g := group{key: string(rune('a' + i)), hits: s[1]}
		for j := 0; j < s[0]; j++ {
			g.members = append(g.members, len(ch.hit))
			ch.hit = append(ch.hit, j < s[1])
			ch.in = append(ch.in, []int{i})
			ch.up = append(ch.up, []int{-1})
			ch.down = append(ch.down, nil)
		}
		ch.groups = append(ch.groups, g)
	}
	return ch
}

func TestChoose(t *testing.T) {
	// a: 5 of 10, b: 2 of 2, c: 0 of 3, d: 4 of 5, e: 1 of 2, f: 1 of 3.
	ch := choiceOf([2]int{10, 5}, [2]int{2, 2}, [2]int{3, 0}, [2]int{5, 4}, [2]int{2, 1}, [2]int{3, 1})
	for _, c := range []struct {
		p     float64
		taken string
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
		// At 0 every group with a hit; the one without never.
		{0, "abdef"},
		{1, "b"},
	} {
		made, n := ch.choose(c.p)
		var want []bool
		for i, g := range ch.groups {
			for range g.members {
				want = append(want, slices.Contains([]byte(c.taken), byte('a'+i)))
			}
		}
		var taken []byte
		for _, g := range n {
			taken = append(taken, byte('a'+g))
		}
		slices.Sort(taken)
		if !slices.Equal(made, want) || string(taken) != c.taken {
			t.Errorf("choose at %.3f made %v by %q, want %v by %q", c.p, made, taken, want, c.taken)
		}
	}
}

func TestChooseShared(t *testing.T) {
	// Candidate 0 (a hit) is made by a and by b; b also makes 1 (a
	// detour). Once a is taken, b adds one detour and no hit: not taken.
	ch := &choice{
		groups: []group{{key: "a", members: []int{0}, hits: 1}, {key: "b", members: []int{0, 1}, hits: 1}},
		hit:    []bool{true, false},
		in:     [][]int{{0, 1}, {1}},
		up:     [][]int{{-1, -1}, {-1}},
		down:   [][]int{nil, nil},
	}
	made, taken := ch.choose(0.5)
	if !slices.Equal(made, []bool{true, false}) || !slices.Equal(taken, []int{0}) {
		t.Errorf("made %v by groups %v, want [true false] by [0]", made, taken)
	}
}

func TestChooseChained(t *testing.T) {
	// Candidate 1 (b's, a hit) was offered by the answer to candidate 0
	// (a's, a hit); a also makes 2, a detour. b alone makes nothing: its
	// site is not made. Taken after a, on the second pass, it makes 1.
	ch := &choice{
		groups: []group{{key: "a", members: []int{0, 2}, hits: 1}, {key: "b", members: []int{1}, hits: 1}},
		hit:    []bool{true, true, false},
		in:     [][]int{{0}, {1}, {0}},
		up:     [][]int{{-1}, {0}, {-1}},
		down:   [][]int{{1}, nil, nil},
	}
	for _, c := range []struct {
		p     float64
		want  []bool
		taken []int
	}{
		{0.5, []bool{true, true, true}, []int{0, 1}},
		// a's 1 of 2 is below 60%, so b is never made either.
		{0.6, []bool{false, false, false}, nil},
	} {
		made, taken := ch.choose(c.p)
		if !slices.Equal(made, c.want) || !slices.Equal(taken, c.taken) {
			t.Errorf("at %.2f made %v by groups %v, want %v by %v", c.p, made, taken, c.want, c.taken)
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

func TestChosenBy(t *testing.T) {
	// Two sites' lookups, each in two episodes: by site, the first (3 of
	// 4) is in at 75% and the second (1 of 4) is not; by episode, the
	// second's episode that hit is in too. The last candidate was offered
	// by both sites: by site it is made with a's.
	a, b := []offeredBy{{site: "a", up: -1}}, []offeredBy{{site: "b", up: -1}}
	cs := candidates{all: []candidate{
		{by: a, episode: "1", hit: true}, {by: a, episode: "1", hit: true},
		{by: a, episode: "2", hit: true}, {by: a, episode: "2"},
		{by: b, episode: "1", hit: true}, {by: b, episode: "2"},
		{by: b, episode: "2"}, {by: b, episode: "2"},
		{by: append(slices.Clone(b), a[0]), episode: "3"},
	}}
	bySite := func(o offeredBy, c *candidate) string { return o.site }
	byEpisode := func(o offeredBy, c *candidate) string { return o.site + c.episode }
	// By site, a is 3 of 5 with the shared one: 60%.
	if got, taken := cs.chosenBy(bySite, 0.6); !slices.Equal(got, []bool{true, true, true, true, false, false, false, false, true}) || len(taken) != 1 || taken[0].key != "a" {
		t.Errorf("by site: %v by %v", got, taken)
	}
	if got, taken := cs.chosenBy(byEpisode, 0.75); !slices.Equal(got, []bool{true, true, true, true, true, false, false, false, false}) || len(taken) != 3 {
		t.Errorf("by episode: %v by %v", got, taken)
	}
}
