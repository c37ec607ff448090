package main

import (
	"slices"
	"testing"
)

func TestChoose(t *testing.T) {
	groups := []group{
		{key: "half of ten", offers: 10, hits: 5},
		{key: "all", offers: 2, hits: 2},
		{key: "none", offers: 3, hits: 0},
		{key: "four of five", offers: 5, hits: 4},
		{key: "half of two", offers: 2, hits: 1},
		{key: "third", offers: 3, hits: 1},
	}
	for _, c := range []struct {
		p    float64
		want []bool
	}{
		// 2/2, then 4/5 (6/7, 85.7%); 5/10 would make 11/17 and is
		// passed over; 1/2 makes 7/9 (77.8%), below 80%: passed over too.
		{0.85, []bool{false, true, false, true, false, false}},
		// At 75%: 2/2, 4/5, not 5/10 (11/17, 64.7%), then 1/2 (7/9,
		// 77.8%), not 1/3 (8/12, 66.7%).
		{0.75, []bool{false, true, false, true, true, false}},
		// 6/7 is exactly 6/7: a floor met exactly is met.
		{6.0 / 7, []bool{false, true, false, true, false, false}},
		// At 0 every group with a hit; the one without never.
		{0, []bool{true, true, false, true, true, true}},
		{1, []bool{false, true, false, false, false, false}},
	} {
		if got := choose(groups, c.p); !slices.Equal(got, c.want) {
			t.Errorf("choose at %.3f = %v, want %v", c.p, got, c.want)
		}
	}
}

func TestSavedBy(t *testing.T) {
	// Three turns: one covered by candidate 0, one by 1 and 2 together,
	// one by 2 alone.
	turns := [][]int{{0}, {1, 2}, {2}}
	for _, c := range []struct {
		chosen []bool
		want   int
	}{
		{[]bool{true, true, true}, 3},
		{[]bool{true, false, true}, 2}, // the second turn needs both its calls' lookups
		{[]bool{false, true, false}, 0},
		{[]bool{false, false, false}, 0},
	} {
		if got := savedBy(turns, c.chosen); got != c.want {
			t.Errorf("savedBy(%v) = %d, want %d", c.chosen, got, c.want)
		}
	}
}

func TestChosenBy(t *testing.T) {
	// Two sites' lookups, each in two episodes: by site, the first (3 of
	// 4) is in at 75% and the second (1 of 4) is not; by episode, the
	// second's episode that hit is in too.
	cs := candidates{all: []candidate{
		{site: "a", episode: "1", hit: true}, {site: "a", episode: "1", hit: true},
		{site: "a", episode: "2", hit: true}, {site: "a", episode: "2"},
		{site: "b", episode: "1", hit: true}, {site: "b", episode: "2"},
		{site: "b", episode: "2"}, {site: "b", episode: "2"},
	}}
	bySite := func(c *candidate) string { return c.site }
	byEpisode := func(c *candidate) string { return c.site + c.episode }
	if got, want := cs.chosenBy(bySite, 0.75), []bool{true, true, true, true, false, false, false, false}; !slices.Equal(got, want) {
		t.Errorf("by site: %v, want %v", got, want)
	}
	if got, want := cs.chosenBy(byEpisode, 0.75), []bool{true, true, true, true, true, false, false, false}; !slices.Equal(got, want) {
		t.Errorf("by episode: %v, want %v", got, want)
	}
}
