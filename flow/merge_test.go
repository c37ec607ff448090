package flow_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/learn"
)

// shopEpisodes makes n episodes of a small shop over n/2 tasks, two
// trials each, that vary as agents do: the agent finds a user by email,
// reads the user, reads one or both orders (an order it asks for may not
// exist), reads an item, searches with one of two constants, and cancels.
func shopEpisodes(n int) []*episode.Episode {
	kinds := map[string]episode.Kind{"find_user": episode.Read, "get_user": episode.Read, "get_order": episode.Read,
		"get_item": episode.Read, "search": episode.Read, "cancel": episode.Write}
	schema := `{"type":"object","properties":{"user_id":{"type":"string"},"order_id":{"type":"string"},"item_id":{"type":"string"},"email":{"type":"string"},"zip":{"type":"string"},"mode":{"type":"string"}}}`
	rng := rand.New(rand.NewPCG(1, 2))
	var eps []*episode.Episode
	for i := range n {
		task := i / 2
		ep := &episode.Episode{ID: fmt.Sprintf("ep%d", i), Source: episode.SourceMCP, Domain: "shop", TaskID: fmt.Sprintf("task%d", task),
			Servers: []episode.Server{{Name: "shop"}}, Started: time.Date(2026, 3, 1, 0, i, 0, 0, time.UTC)}
		for _, name := range slices.Sorted(maps.Keys(kinds)) {
			ep.Tools = append(ep.Tools, episode.Tool{Name: name, Server: "shop", Kind: kinds[name], InputSchema: json.RawMessage(schema)})
		}
		turn := 0
		add := func(tool, args, result string, failed bool) {
			c := &episode.Call{Index: len(ep.Calls()), ID: fmt.Sprint(turn), Server: "shop", Tool: tool, Args: json.RawMessage(args), By: episode.Agent, Turn: turn}
			c.Result = &episode.Result{CallIndex: c.Index, Text: result, IsError: failed}
			ep.Events = append(ep.Events, episode.Event{Type: episode.EventCall, TMS: int64(10 * turn), Call: c},
				episode.Event{Type: episode.EventResult, TMS: int64(10*turn + 5), Result: c.Result})
			turn++
		}
		u := fmt.Sprintf("user_%d", task)
		oa, ob := fmt.Sprintf("#W%da", task), fmt.Sprintf("#W%db", task)
		add("find_user", fmt.Sprintf(`{"email":"c%d@example.com"}`, task), u, false)
		add("get_user", fmt.Sprintf(`{"user_id":%q}`, u), fmt.Sprintf(`{"user_id":%q,"profile":{"zip":"1000%d"},"orders":[%q,%q]}`, u, task, oa, ob), false)
		if rng.IntN(5) == 0 {
			add("get_order", `{"order_id":"#W0"}`, "no such order", true)
		}
		add("get_order", fmt.Sprintf(`{"order_id":%q}`, oa), fmt.Sprintf(`{"order_id":%q,"items":[{"item_id":"i%d1"},{"item_id":"i%d2"}]}`, oa, task, task), false)
		if rng.IntN(2) == 0 {
			add("get_order", fmt.Sprintf(`{"order_id":%q}`, ob), fmt.Sprintf(`{"order_id":%q,"items":[]}`, ob), false)
		}
		if rng.IntN(3) > 0 {
			add("get_item", fmt.Sprintf(`{"item_id":"i%d1"}`, task), `{"price":3}`, false)
		}
		mode := []string{"standard", "express"}[rng.IntN(2)]
		add("search", fmt.Sprintf(`{"zip":"1000%d","mode":%q}`, task, mode), `[]`, false)
		add("cancel", fmt.Sprintf(`{"order_id":%q}`, oa), "ok", false)
		eps = append(eps, ep)
	}
	return eps
}

type episodes []*episode.Episode

func (s episodes) Episodes(ctx context.Context, _ episode.Filter, fn func(*episode.Episode) error) error {
	for _, ep := range s {
		if err := fn(ep); err != nil {
			return err
		}
	}
	return nil
}

func learnFlow(t *testing.T, eps []*episode.Episode, opt learn.Options) *flow.Flow {
	t.Helper()
	f, err := learn.FromSource(context.Background(), episodes(eps), episode.Filter{}, opt)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func marshal(t *testing.T, f *flow.Flow) []byte {
	t.Helper()
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// shardByTask splits episodes into n shards of whole tasks, as a user
// partitions logs by task or host session.
func shardByTask(eps []*episode.Episode, n int) [][]*episode.Episode {
	out := make([][]*episode.Episode, n)
	for _, ep := range eps {
		i := flow.FoldOf(flow.TaskKey(ep)+"/shard", n)
		out[i] = append(out[i], ep)
	}
	return out
}

// Learning shards of the episodes apart and merging the flows gives the
// bytes of learning them all at once, in any order of the shards.
func TestMergeOfShardsIsTheWhole(t *testing.T) {
	eps := shopEpisodes(80)
	// Every binding a shard sees is kept (min support 1, no cap, no chance
	// rule), so the sums are exact. A predicate is not: each shard chooses
	// its own, and the merge keeps only one every shard chose
	// (mergePredicate), so the episodes' empty item lists, which would
	// give get_item a predicate over the whole and not in every shard,
	// are learned without list conditions.
	opt := learn.Options{Domain: "shop", MinSupport: 1, MaxBindings: 1 << 20, Workers: 1, KeepReferences: true, NoListConditions: true}
	whole := marshal(t, learnFlow(t, eps, opt))
	for _, n := range []int{2, 3} {
		shards := shardByTask(eps, n)
		var fs []*flow.Flow
		for i, sh := range shards {
			if len(sh) == 0 {
				t.Fatalf("%d shards: shard %d is empty", n, i)
			}
			// Each shard's flow goes through its file, as hoist flow merge
			// reads it.
			f, err := flow.Parse(marshal(t, learnFlow(t, sh, opt)), "shard.flow.json")
			if err != nil {
				t.Fatal(err)
			}
			fs = append(fs, f)
		}
		for _, order := range [][]*flow.Flow{fs, reversed(fs)} {
			m, err := flow.Merge(order...)
			if err != nil {
				t.Fatal(err)
			}
			if got := marshal(t, m); !bytes.Equal(got, whole) {
				t.Errorf("%d shards merged differ from the whole (-whole +merged):\n%s", n, cmp.Diff(string(whole), string(got)))
			}
		}
	}
	// Checks that the comparison has something to compare.
	f := learnFlow(t, eps, opt)
	bound := 0
	for _, s := range f.Sites {
		for _, l := range s.Lookups {
			bound += len(l.Bindings)
		}
	}
	if len(f.Sites) < 5 || bound < 5 || f.Folds < 2 {
		t.Errorf("the whole flow has %d sites, %d bindings, %d folds: too little to test a merge", len(f.Sites), bound, f.Folds)
	}
}

func reversed(fs []*flow.Flow) []*flow.Flow {
	out := make([]*flow.Flow, len(fs))
	for i, f := range fs {
		out[len(fs)-1-i] = f
	}
	return out
}

// With the default min support, a merge still adds what each shard kept:
// every count is at most the whole's, and the episodes add up.
func TestMergeWithDefaultsUndercountsOnly(t *testing.T) {
	eps := shopEpisodes(80)
	opt := learn.Options{Domain: "shop", Workers: 1}
	whole := learnFlow(t, eps, opt)
	var fs []*flow.Flow
	for _, sh := range shardByTask(eps, 2) {
		fs = append(fs, learnFlow(t, sh, opt))
	}
	m, err := flow.Merge(fs...)
	if err != nil {
		t.Fatal(err)
	}
	if m.Learned.Episodes != len(eps) || m.Learned.Digest != whole.Learned.Digest || m.Learned.Tasks != whole.Learned.Tasks {
		t.Errorf("merged provenance %+v, whole %+v", m.Learned, whole.Learned)
	}
	matched := func(f *flow.Flow) map[string]int {
		out := map[string]int{}
		for _, s := range f.Sites {
			for _, l := range s.Lookups {
				for _, b := range l.Bindings {
					out[s.Tool+" "+l.Tool+" "+flow.BindingString(b.Args)] = b.Matched.N
				}
			}
		}
		return out
	}
	w := matched(whole)
	for k, n := range matched(m) {
		if wn, ok := w[k]; ok && n > wn {
			t.Errorf("%s: matched %d in the merge, %d in the whole", k, n, wn)
		}
	}
}

// A tool one shard saw write is a write in the merge, and no site looks it
// up, though another shard learned lookups of it.
func TestMergeOfAToolSeenWriting(t *testing.T) {
	eps := shopEpisodes(40)
	opt := learn.Options{Domain: "shop", MinSupport: 1, Workers: 1}
	reads := learnFlow(t, eps[:20], opt)
	found := false
	for _, s := range reads.Sites {
		for _, l := range s.Lookups {
			found = found || l.Tool == "get_item"
		}
	}
	if !found {
		t.Fatal("no lookup of get_item to merge")
	}
	var writes []*episode.Episode
	for _, ep := range eps[20:] {
		for i := range ep.Tools {
			if ep.Tools[i].Name == "get_item" {
				ep.Tools[i].Kind = episode.Write
			}
		}
		writes = append(writes, ep)
	}
	m, err := flow.Merge(reads, learnFlow(t, writes, opt))
	if err != nil {
		t.Fatal(err)
	}
	if m.Tools["get_item"].Kind != episode.Write {
		t.Errorf("get_item is %s in the merge", m.Tools["get_item"].Kind)
	}
	for _, s := range m.Sites {
		for _, l := range s.Lookups {
			if l.Tool == "get_item" {
				t.Errorf("after %s the merge looks up get_item", s.Tool)
			}
		}
	}
}

func TestMergeRefuses(t *testing.T) {
	eps := shopEpisodes(80)
	base := learnFlow(t, eps[:10], learn.Options{Domain: "shop", Workers: 1})
	promoted := learnFlow(t, eps[10:20], learn.Options{Domain: "shop", Workers: 1})
	yes := true
	promoted.Sites[0].Promoted = &yes
	for _, c := range []struct {
		name  string
		other *flow.Flow
		field string
	}{
		{"another domain", learnFlow(t, eps[10:20], learn.Options{Domain: "other", Workers: 1}), "domain"},
		{"other folds", learnFlow(t, eps[10:20], learn.Options{Domain: "shop", Folds: 3, Workers: 1}), "folds"},
		{"another min support", learnFlow(t, eps[10:20], learn.Options{Domain: "shop", MinSupport: 2, Workers: 1}), "min_support"},
		{"a promoted flow", promoted, "sites"},
		{"learned with the agent's words", learnFlow(t, eps[10:20], learn.Options{Domain: "shop", AgentWords: true, Workers: 1}), "learned.agent_words"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := flow.Merge(base, c.other)
			var me *flow.MergeError
			if !errors.As(err, &me) || me.Index != 1 || me.Field != c.field {
				t.Errorf("Merge = %v, want a MergeError of flow 2's %s", err, c.field)
			}
		})
	}
	if _, err := flow.Merge(); err == nil {
		t.Error("Merge of nothing: no error")
	}
}
