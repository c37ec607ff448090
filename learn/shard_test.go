package learn

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
)

// shopVariants makes n episodes of a shop over n/3 tasks that vary as
// agents do: orders read or not, an order that does not exist, one item
// or two, a search with one of two modes, a user read again after the
// write; enough offers, hit and missed, for an arbiter.
func shopVariants(n int) []*episode.Episode {
	rng := rand.New(rand.NewPCG(7, 11))
	var eps []*episode.Episode
	for i := range n {
		task := i / 3
		u := fmt.Sprintf("user_%d", task)
		oa, ob := fmt.Sprintf("#W%da", task), fmt.Sprintf("#W%db", task)
		status := []string{"pending", "delivered", "cancelled"}[rng.IntN(3)]
		calls := []call{
			{tool: "find_user", args: fmt.Sprintf(`{"email":"c%d@example.com"}`, task), result: u, turn: 0},
			{tool: "get_user", args: fmt.Sprintf(`{"user_id":%q}`, u), result: fmt.Sprintf(`{"user_id":%q,"profile":{"zip":"1000%d"},"orders":[%q,%q]}`, u, task, oa, ob), turn: 1},
		}
		if rng.IntN(5) == 0 {
			calls = append(calls, call{tool: "get_order", args: `{"order_id":"#W0"}`, result: "no such order", failed: true, turn: 2})
		}
		calls = append(calls, call{tool: "get_order", args: fmt.Sprintf(`{"order_id":%q}`, oa),
			result: fmt.Sprintf(`{"order_id":%q,"status":%q,"items":[{"item_id":"i%d1"},{"item_id":"i%d2"}]}`, oa, status, task, task), turn: 2})
		if rng.IntN(2) == 0 {
			calls = append(calls, call{tool: "get_order", args: fmt.Sprintf(`{"order_id":%q}`, ob), result: fmt.Sprintf(`{"order_id":%q,"status":"pending","items":[]}`, ob), turn: 2})
		}
		if status != "cancelled" || rng.IntN(4) == 0 {
			calls = append(calls, call{tool: "get_item", args: fmt.Sprintf(`{"item_id":"i%d1"}`, task), result: `{"price":3}`, turn: 3})
			if rng.IntN(3) == 0 {
				calls = append(calls, call{tool: "get_item", args: fmt.Sprintf(`{"item_id":"i%d2"}`, task), result: `{"price":4}`, turn: 3})
			}
		}
		mode := []string{"standard", "express"}[rng.IntN(2)]
		calls = append(calls, call{tool: "search", args: fmt.Sprintf(`{"zip":"1000%d","mode":%q}`, task, mode), result: `[]`, turn: 4},
			call{tool: "cancel", args: fmt.Sprintf(`{"order_id":%q}`, oa), result: "ok", turn: 5})
		if rng.IntN(2) == 0 {
			calls = append(calls, call{tool: "get_user", args: fmt.Sprintf(`{"user_id":%q}`, u), result: "{}", turn: 6})
		}
		eps = append(eps, crafted(fmt.Sprintf("ep%d", i), fmt.Sprintf("task%d", task), calls...))
	}
	return eps
}

// tau2Episodes reads the τ² sample's results files of a domain.
func tau2Episodes(t testing.TB, domain string) []*episode.Episode {
	t.Helper()
	dir := filepath.Join("..", "testdata", "tau2")
	kinds, err := episode.LoadToolKinds(filepath.Join(dir, "tool_kinds.json"))
	if err != nil {
		t.Fatal(err)
	}
	schemas, err := episode.LoadToolSchemas(filepath.Join(dir, "tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "results", domain+"-*.json"))
	var eps []*episode.Episode
	for _, f := range files {
		r, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		err = episode.EachTau2(r, f, episode.Tau2Options{Kinds: kinds, Schemas: schemas, Domain: domain}, func(ep *episode.Episode) error {
			eps = append(eps, ep)
			return nil
		})
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(eps) == 0 {
		t.Fatalf("no %s episodes in %s", domain, dir)
	}
	return eps
}

// learnWhole is hoist learn: the counts, then the arbiter.
func learnWhole(t *testing.T, eps []*episode.Episode, opt Options) []byte {
	t.Helper()
	f, err := FromSource(context.Background(), sliceSource(eps), episode.Filter{}, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !opt.HabitOnly {
		if err := FitArbiter(context.Background(), sliceSource(eps), episode.Filter{}, f); err != nil {
			t.Fatal(err)
		}
	}
	return marshalFlow(t, f)
}

func marshalFlow(t *testing.T, f *flow.Flow) []byte {
	t.Helper()
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// throughFile is a flow as hoist flow merge reads it back from its file.
func throughFile(t *testing.T, f *flow.Flow) *flow.Flow {
	t.Helper()
	g, err := flow.Parse(marshalFlow(t, f), "shard.flow.json")
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// mergeInGroups merges flows as a tree of random groups (keeping the
// shard members until the last merge), to try the merge's associativity.
func mergeInGroups(t *testing.T, rng *rand.Rand, fs []*flow.Flow) *Merged {
	t.Helper()
	for len(fs) > 2 && rng.IntN(2) == 0 {
		i := rng.IntN(len(fs) - 1)
		m, err := MergeShards(fs[i:i+2], true)
		if err != nil {
			t.Fatal(err)
		}
		fs = append(append(fs[:i:i], throughFile(t, m.Flow)), fs[i+2:]...)
	}
	m, err := MergeShards(fs, false)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Any split of the episodes into shards (tasks cut across shards, any
// order within them), learned with --shard, merged in any grouping,
// replayed with the merged counts and merged again, gives the flow of one
// learn over all of them, byte for byte, arbiter included.
func TestShardsMergeToTheWhole(t *testing.T) {
	for _, tc := range []struct {
		name string
		eps  []*episode.Episode
		opt  Options
	}{
		{"shop", shopVariants(90), Options{Domain: "shop"}},
		{"shop min support 1", shopVariants(45), Options{Domain: "shop", MinSupport: 1, Folds: 3}},
		{"shop habit only", shopVariants(30), Options{Domain: "shop", HabitOnly: true}},
		{"tau2 airline", tau2Episodes(t, "airline"), Options{Domain: "airline", MinSupport: 1, Folds: 2}},
		{"tau2 retail", tau2Episodes(t, "retail"), Options{Domain: "retail", MinSupport: 1, Folds: 2}},
		{"cues", cueEpisodes(), Options{Domain: "shop", MinSupport: 2, Folds: 2, Cues: true}},
		{"the agent's words", agentWordEpisodes(), Options{Domain: "shop", MinSupport: 2, Folds: 2, Cues: true, AgentWords: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			whole := learnWhole(t, tc.eps, tc.opt)
			if !tc.opt.HabitOnly && tc.name == "shop" && !bytes.Contains(whole, []byte(`"arbiter"`)) {
				t.Fatal("the whole has no arbiter: the test would prove little")
			}
			if tc.opt.Cues && !bytes.Contains(whole, []byte(`"cues": [`)) {
				t.Fatal("the whole has no cues: the test would prove little")
			}
			if tc.opt.AgentWords && !bytes.Contains(whole, []byte(`"by": "agent"`)) {
				t.Fatal("the whole has no cue of the agent's: the test would prove little")
			}
			rng := rand.New(rand.NewPCG(uint64(len(tc.eps)), 3))
			for trial := range 12 {
				k := 1 + rng.IntN(min(5, len(tc.eps)))
				shards := make([][]*episode.Episode, k)
				for _, i := range rng.Perm(len(tc.eps)) {
					s := rng.IntN(k)
					shards[s] = append(shards[s], tc.eps[i])
				}
				var counts []*flow.Flow
				for _, sh := range shards {
					opt := tc.opt
					opt.Workers = 1 + rng.IntN(3)
					l, err := Count(context.Background(), sliceSource(sh), episode.Filter{}, opt)
					if err != nil {
						t.Fatal(err)
					}
					f := l.Flow()
					if f.Shard, err = l.ShardOfCounts(); err != nil {
						t.Fatal(err)
					}
					counts = append(counts, throughFile(t, f))
				}
				m := mergeInGroups(t, rng, counts)
				merged := throughFile(t, m.Flow)
				if m.Pending != NeedsArbiter(merged) {
					t.Fatalf("pending %v for a flow that needs an arbiter: %v", m.Pending, NeedsArbiter(merged))
				}
				if m.Pending {
					var tables []*flow.Flow
					for _, s := range rng.Perm(k) {
						tb, err := ReplayTable(context.Background(), sliceSource(shards[s]), episode.Filter{}, merged, ArbiterOptions{})
						if err != nil {
							t.Fatal(err)
						}
						f := *merged
						if f.Shard, err = tb.ShardOfTable(); err != nil {
							t.Fatal(err)
						}
						tables = append(tables, throughFile(t, &f))
					}
					m = mergeInGroups(t, rng, tables)
				}
				if got := marshalFlow(t, m.Flow); !bytes.Equal(got, whole) {
					t.Fatalf("trial %d, %d shards: the merge differs from one learn (-whole +merge):\n%s", trial, k, cmp.Diff(string(whole), string(got)))
				}
			}
		})
	}
}

// Merges that cannot give the whole say which flow and which field.
func TestMergeShardsErrors(t *testing.T) {
	eps := shopVariants(30)
	shard := func(opt Options, eps []*episode.Episode) *flow.Flow {
		l, err := Count(context.Background(), sliceSource(eps), episode.Filter{}, opt)
		if err != nil {
			t.Fatal(err)
		}
		f := l.Flow()
		if f.Shard, err = l.ShardOfCounts(); err != nil {
			t.Fatal(err)
		}
		return throughFile(t, f)
	}
	a := shard(Options{Domain: "shop"}, eps[:15])
	b := shard(Options{Domain: "shop"}, eps[15:])
	m, err := MergeShards([]*flow.Flow{a, b}, false)
	if err != nil {
		t.Fatal(err)
	}
	counts := throughFile(t, m.Flow)
	tb, err := ReplayTable(context.Background(), sliceSource(eps[:15]), episode.Filter{}, counts, ArbiterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	table := *counts
	table.Shard, _ = tb.ShardOfTable()
	plain := learnFlowOf(t, eps, Options{Domain: "shop"})
	for _, c := range []struct {
		name  string
		fs    []*flow.Flow
		index int
		field string
		says  string
	}{
		{"another min support", []*flow.Flow{a, shard(Options{Domain: "shop", MinSupport: 2}, eps[15:])}, 1, "shard.counts.options.min_support", "2, the first flow has 3"},
		{"another domain", []*flow.Flow{a, shard(Options{Domain: "other"}, eps[15:])}, 1, "shard.counts.options.domain", `"other", the first flow has "shop"`},
		{"without list conditions", []*flow.Flow{a, shard(Options{Domain: "shop", MinSupport: 3, NoListConditions: true}, eps[15:])}, 1, "shard.counts.options.list_conditions", "false, the first flow has true"},
		{"no shard", []*flow.Flow{a, plain}, 1, "shard", "not learned with hoist learn --shard"},
		{"counts after a table", []*flow.Flow{&table, a}, 1, "shard.counts", "merge the counts first"},
		{"a table after counts", []*flow.Flow{a, &table}, 1, "shard.table", "merge the counts first"},
		{"a table of some episodes", []*flow.Flow{&table}, -1, "shard.table.episodes", "the tables hold 15 of the 30 episodes"},
		{"another flow replayed", []*flow.Flow{&table, tableOf(t, a, eps[:15])}, 1, "learned.digest", "replayed with another flow"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := MergeShards(c.fs, false)
			me, ok := err.(*flow.MergeError)
			if !ok || me.Index != c.index || me.Field != c.field || !strings.Contains(me.Err.Error(), c.says) {
				t.Fatalf("got %v; want flow %d, field %s, saying %q", err, c.index, c.field, c.says)
			}
			if strings.Contains(err.Error(), "&{") {
				t.Errorf("the error prints a Go value: %v", err)
			}
		})
	}
}

func learnFlowOf(t *testing.T, eps []*episode.Episode, opt Options) *flow.Flow {
	t.Helper()
	f, err := FromSource(context.Background(), sliceSource(eps), episode.Filter{}, opt)
	if err != nil {
		t.Fatal(err)
	}
	return throughFile(t, f)
}

// tableOf is the flow of a table of eps replayed with f (a shard's own
// counts, not the merge).
func tableOf(t *testing.T, f *flow.Flow, eps []*episode.Episode) *flow.Flow {
	t.Helper()
	g := *f
	g.Shard = nil
	tb, err := ReplayTable(context.Background(), sliceSource(eps), episode.Filter{}, &g, ArbiterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g.Shard, _ = tb.ShardOfTable()
	return throughFile(t, &g)
}
