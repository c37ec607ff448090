// Command auditbench measures hoist audit against the target of issue 6,
// point 7: the audit of 10,000 generated sessions in under 10 s.
//
// It generates -sessions sessions of a small shop (find a user by email,
// read the user, read some of its orders, now and then cancel one and read
// it again, and some searches no earlier result names), learns a flow from
// them with folds by task, writes them into a temporary store, and times:
//
//   - audit from the store: audit.Run reading every episode from the store
//     (what hoist audit --store does, less loading the flow), with the
//     bootstrap intervals (-resamples);
//   - audit in memory: the same over the episodes already in memory, which
//     is the audit's own share.
//
// Writing the store is timed too, and reported apart: hoist audit --sessions
// ingests only what is new, so a second audit of the same logs reads them
// from the store.
//
// Usage:
//
//	go run ./internal/benchcmd/auditbench [-sessions 10000] [-resamples 1000] [-seed 1]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/hoist-mcp/hoist/audit"
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/learn"
	"github.com/hoist-mcp/hoist/store"
)

// target is issue 6, point 7.
const target = 10 * time.Second

func main() {
	n := flag.Int("sessions", 10000, "sessions to generate")
	resamples := flag.Int("resamples", audit.DefaultResamples, "bootstrap resamples of each interval")
	seed := flag.Uint64("seed", 1, "seed of the generator and the bootstrap")
	flag.Parse()
	if err := run(*n, *resamples, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "auditbench:", err)
		os.Exit(1)
	}
}

func run(n, resamples int, seed uint64) error {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 0x62656e6368))
	eps := make([]*episode.Episode, n)
	calls, turns := 0, 0
	for i := range eps {
		eps[i] = generate(rng, i)
		calls += len(eps[i].Calls())
		turns += len(eps[i].Turns)
	}
	l := learn.New(learn.Options{Domain: "shop", Folds: 5, MinSupport: 3})
	for _, ep := range eps {
		l.Add(ep)
	}
	f := l.Flow()

	tmp, err := os.MkdirTemp("", "auditbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	db, err := store.Open(ctx, filepath.Join(tmp, "hoist.db"))
	if err != nil {
		return err
	}
	defer db.Close()
	start := time.Now()
	for i := 0; i < len(eps); i += 500 {
		if _, err := db.Put(ctx, store.Unit{Episodes: eps[i:min(i+500, len(eps))]}); err != nil {
			return fmt.Errorf("writing the store: %w", err)
		}
	}
	write := time.Since(start)

	opt := audit.Options{Rule: flow.Rule{Decider: flow.Reach, Threshold: flow.DefaultThreshold}, Caps: flow.DefaultCaps, Resamples: resamples, Seed: seed}
	start = time.Now()
	rep, err := audit.Run(ctx, db, f, opt)
	if err != nil {
		return err
	}
	fromStore := time.Since(start)
	start = time.Now()
	mem, err := audit.Run(ctx, memSource(eps), f, opt)
	if err != nil {
		return err
	}
	inMemory := time.Since(start)
	if mem.Total.Counts != rep.Total.Counts {
		return fmt.Errorf("the store and memory disagree: %+v and %+v", rep.Total.Counts, mem.Total.Counts)
	}

	fmt.Printf("auditbench: %d sessions (%d calls, %d LLM turns), %d bootstrap resamples, GOMAXPROCS %d\n", n, calls, turns, resamples, runtime.GOMAXPROCS(0))
	fmt.Printf("  store written in %s (not part of the audit)\n", write.Round(time.Millisecond))
	fmt.Printf("  audit from the store: %s (%.0f sessions/s; target %s) %s\n", fromStore.Round(time.Millisecond), float64(n)/fromStore.Seconds(), target, verdict(fromStore))
	fmt.Printf("  audit in memory:      %s (%.0f sessions/s)\n", inMemory.Round(time.Millisecond), float64(n)/inMemory.Seconds())
	t := rep.Total
	fmt.Printf("  report: %d lookups, %d hits, %d detours; precision %.1f%%; turns saved %.1f%% (%.1f–%.1f%%); ceiling %.1f%%\n",
		t.Lookups, t.Hits, t.Detours, 100*t.Precision.Value, 100*t.Saved.Value, 100*t.Saved.Lo, 100*t.Saved.Hi, 100*t.Ceiling.Value)
	if fromStore > target {
		return fmt.Errorf("audit took %s, over the target of %s", fromStore.Round(time.Millisecond), target)
	}
	return nil
}

func verdict(d time.Duration) string {
	if d <= target {
		return "ok"
	}
	return "OVER"
}

type memSource []*episode.Episode

func (m memSource) Episodes(_ context.Context, _ episode.Filter, fn func(*episode.Episode) error) error {
	for _, ep := range m {
		if err := fn(ep); err != nil {
			return err
		}
	}
	return nil
}

var schema = json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)

// generate makes session i of the shop: 200 users, each with 1 to 3 orders.
func generate(rng *rand.Rand, i int) *episode.Episode {
	user := rng.IntN(200)
	ep := &episode.Episode{
		ID: fmt.Sprintf("gen-%05d", i), Source: episode.SourceMCP, Domain: "shop",
		HostSession: fmt.Sprintf("task-%03d", user%60), // a task: what the fold is keyed by
		Started:     time.Unix(1790000000+int64(i)*60, 0).UTC(),
		Servers:     []episode.Server{{Name: "shop", Session: fmt.Sprintf("gen-%05d", i)}},
	}
	for _, t := range []struct {
		name string
		kind episode.Kind
	}{{"find_user", episode.Read}, {"get_user", episode.Read}, {"get_order", episode.Read}, {"search", episode.Read}, {"cancel", episode.Write}} {
		ep.Tools = append(ep.Tools, episode.Tool{Name: t.name, Server: "shop", Kind: t.kind, InputSchema: schema})
	}
	ms := int64(0)
	turn := -1
	call := func(newTurn bool, tool, arg, result string) {
		if newTurn || turn < 0 {
			turn++
			ep.Turns = append(ep.Turns, episode.Turn{Index: turn, StartMS: ms})
			ms += 800 + int64(rng.IntN(3000))
		}
		idx := len(ep.Turns[turn].Calls) + countCalls(ep)
		c := &episode.Call{Index: idx, ID: fmt.Sprint(idx + 1), Server: "shop", Tool: tool, Args: json.RawMessage(`{"id":"` + arg + `"}`), By: episode.Agent, Turn: turn}
		r := &episode.Result{CallIndex: idx, Text: result}
		c.Result = r
		ep.Events = append(ep.Events, episode.Event{Type: episode.EventCall, TMS: ms, Call: c})
		ms += 20 + int64(rng.IntN(200))
		ep.Events = append(ep.Events, episode.Event{Type: episode.EventResult, TMS: ms, Result: r})
		ep.Turns[turn].Calls = append(ep.Turns[turn].Calls, idx)
		ep.Turns[turn].EndMS = ms
	}
	uid := fmt.Sprintf("user_%d", user)
	orders := make([]string, 1+user%3)
	for k := range orders {
		orders[k] = fmt.Sprintf("#W%d%c", user, 'a'+k)
	}
	ordersJSON, _ := json.Marshal(orders)
	call(true, "find_user", fmt.Sprintf("c%d@example.com", user), uid)
	if rng.Float64() < 0.9 {
		call(true, "get_user", uid, fmt.Sprintf(`{"user_id":%q,"orders":%s}`, uid, ordersJSON))
		parallel := rng.Float64() < 0.3
		for k, o := range orders {
			if rng.Float64() < 0.7 {
				call(!parallel || k == 0, "get_order", o, fmt.Sprintf(`{"order_id":%q,"status":"pending"}`, o))
			}
		}
	}
	if rng.Float64() < 0.3 {
		call(true, "search", fmt.Sprintf("q%d", rng.IntN(1000)), `{"hits":[]}`)
	}
	if rng.Float64() < 0.4 {
		o := orders[rng.IntN(len(orders))]
		call(true, "cancel", o, `{"status":"cancelled"}`)
		call(true, "get_order", o, fmt.Sprintf(`{"order_id":%q,"status":"cancelled"}`, o))
	}
	return ep
}

func countCalls(ep *episode.Episode) int {
	n := 0
	for _, t := range ep.Turns[:len(ep.Turns)-1] {
		n += len(t.Calls)
	}
	return n
}
