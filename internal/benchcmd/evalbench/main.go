// Command evalbench measures hoist evaluate over generated sessions (issue
// 6, point 7) and prints the figures:
//
//   - evaluate.Evaluate in memory over -sessions generated sessions, with
//     the default grid of rules and -reps bootstrap replicates, and with
//     100 replicates (to separate the bootstrap from the rest);
//   - hoist evaluate --store over the same sessions written to a temporary
//     store (reading the episodes and flow logs back, then evaluating), run
//     in process through the command line.
//
// Each generated session is a scripted agent on one server: it looks a
// customer up, then reads some of the customer's orders, sometimes cancels
// one, in 5 to 12 calls; after each call a flow explored with ε = 0.3
// offers reads of the customer and orders with scores from 0.05 to 1, of
// which the agent then makes a share that grows with the score. Usage:
//
//	go run ./internal/benchcmd/evalbench [-sessions 10000] [-reps 2000] [-seed 1]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/evaluate"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/internal/cli"
	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/store"
)

func main() {
	n := flag.Int("sessions", 10000, "sessions to generate")
	reps := flag.Int("reps", evaluate.DefaultReps, "bootstrap replicates")
	seed := flag.Uint64("seed", 1, "generator seed")
	noStore := flag.Bool("no-store", false, "skip the store part")
	flag.Parse()
	if err := run(*n, *reps, *seed, !*noStore); err != nil {
		fmt.Fprintf(os.Stderr, "evalbench: %v\n", err)
		os.Exit(1)
	}
}

func run(n, reps int, seed uint64, withStore bool) error {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 2))
	start := time.Now()
	sessions := make(evaluate.Sessions, n)
	var runs, decisions int
	for i := range sessions {
		sessions[i] = generate(i, rng)
		runs += len(sessions[i].Runs)
		for _, r := range sessions[i].Runs {
			decisions += len(r.Decisions)
		}
	}
	fmt.Printf("generated %d sessions, %d runs, %d decisions in %s (GOMAXPROCS %d)\n",
		n, runs, decisions, time.Since(start).Round(time.Millisecond), runtime.GOMAXPROCS(0))

	for _, r := range []int{reps, 100} {
		start = time.Now()
		rep, err := evaluate.Evaluate(ctx, sessions, evaluate.Options{
			Reward: evaluate.Reward{DetourCost: evaluate.DefaultDetourCost}, Clip: evaluate.DefaultClip,
			Level: evaluate.DefaultLevel, Reps: r, Seed: 1,
		})
		if err != nil {
			return err
		}
		d := time.Since(start)
		fmt.Printf("evaluate.Evaluate, %d rules × 5 estimators, %d replicates: %s, %.0f sessions/s, %.0f decisions/s\n",
			len(rep.Results), r, d.Round(time.Millisecond), float64(n)/d.Seconds(), float64(decisions)/d.Seconds())
		if r == reps {
			for _, res := range rep.Results {
				e := res.Estimates[3]
				fmt.Printf("  %-10s DR %+.3f [%+.3f, %+.3f]  ESS %.0f of %d, %d unevaluable\n", res.Rule,
					float64(e.Value), float64(e.Lo), float64(e.Hi), float64(res.ESS), res.N, res.Unevaluable)
			}
		}
	}
	if !withStore {
		return nil
	}

	dir, err := os.MkdirTemp("", "evalbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "hoist.db")
	start = time.Now()
	if err := writeStore(ctx, path, sessions); err != nil {
		return err
	}
	fmt.Printf("wrote the store in %s\n", time.Since(start).Round(time.Millisecond))
	var out, errb bytes.Buffer
	start = time.Now()
	code := cli.Main(ctx, []string{"evaluate", "--store", path, "--json", "--reps", fmt.Sprint(reps)}, iostreams.Streams{In: bytes.NewReader(nil), Out: &out, Err: &errb})
	d := time.Since(start)
	if code != 0 {
		return fmt.Errorf("hoist evaluate: exit %d: %s", code, errb.String())
	}
	fmt.Printf("hoist evaluate --store (read + evaluate, %d replicates): %s, %.0f sessions/s; %d bytes of JSON\n",
		reps, d.Round(time.Millisecond), float64(n)/d.Seconds(), out.Len())
	return nil
}

// generate makes session i.
func generate(i int, rng *rand.Rand) evaluate.Session {
	e := &episode.Episode{ID: fmt.Sprintf("gen-%06d", i), Source: episode.SourceMCP, Domain: "retail",
		Started: time.Unix(1_700_000_000+int64(i), 0).UTC(), Servers: []episode.Server{{Name: "retail", Session: fmt.Sprintf("gen-%06d", i)}},
		Tools: []episode.Tool{{Name: "find_user", Server: "retail", Kind: episode.Read}, {Name: "get_user", Server: "retail", Kind: episode.Read},
			{Name: "get_order", Server: "retail", Kind: episode.Read}, {Name: "cancel_order", Server: "retail", Kind: episode.Write}}}
	user := fmt.Sprintf(`{"user_id":"u%d"}`, i)
	norders := 1 + rng.IntN(5)
	orders := make([]string, norders)
	for k := range orders {
		orders[k] = fmt.Sprintf(`{"order_id":"#W%d%c"}`, i, 'a'+k)
	}
	// The agent's calls: find, get_user, then orders, maybe a cancel.
	type call struct{ tool, args string }
	calls := []call{{"find_user", fmt.Sprintf(`{"email":"c%d@x"}`, i)}}
	if rng.Float64() < 0.9 {
		calls = append(calls, call{"get_user", user})
	}
	for _, o := range orders {
		if rng.Float64() < 0.7 {
			calls = append(calls, call{"get_order", o})
		}
	}
	if rng.Float64() < 0.4 {
		calls = append(calls, call{"cancel_order", orders[0]})
		if rng.Float64() < 0.5 {
			calls = append(calls, call{"get_order", orders[0]})
		}
	}
	tms := int64(0)
	turn := 0
	for ci, c := range calls {
		if ci > 0 && rng.Float64() < 0.7 {
			turn++
		}
		for len(e.Turns) <= turn {
			e.Turns = append(e.Turns, episode.Turn{Index: len(e.Turns)})
		}
		e.Turns[turn].Calls = append(e.Turns[turn].Calls, ci)
		ec := &episode.Call{Index: ci, ID: fmt.Sprint(ci + 1), Server: "retail", Tool: c.tool, Args: json.RawMessage(c.args), By: episode.Agent, Turn: turn}
		res := &episode.Result{CallIndex: ci, Text: "ok", Raw: json.RawMessage(`{"jsonrpc":"2.0","id":1,"result":{}}`)}
		ec.Result = res
		tms += 100
		e.Events = append(e.Events, episode.Event{Type: episode.EventCall, TMS: tms, Call: ec})
		tms += 50
		e.Events = append(e.Events, episode.Event{Type: episode.EventResult, TMS: tms, Result: res})
	}
	// The flow's runs: after each call, offers of the user and orders not
	// yet asked for, explored with ε = 0.3.
	rule := flow.Rule{Decider: flow.Reach, Threshold: 0.3, Epsilon: 0.3}
	asked := map[string]bool{}
	s := evaluate.Session{Episode: e}
	for _, c := range calls {
		asked[c.tool+c.args] = true
		if c.tool == "cancel_order" {
			clear(asked)
		}
		var offers []flow.Offer
		add := func(tool, args string) {
			if !asked[tool+args] {
				p := 0.05 + 0.95*rng.Float64()
				offers = append(offers, flow.Offer{Tool: tool, Args: json.RawMessage(args), From: c.tool,
					PReach: p, PHabit: p * (0.5 + 0.5*rng.Float64()), PBinding: 1, Support: 20})
			}
		}
		switch c.tool {
		case "find_user":
			add("get_user", user)
		case "get_user":
			for _, o := range orders {
				add("get_order", o)
			}
		default:
			continue
		}
		r := evaluate.Run{Server: 0, Call: c.tool}
		for taken := 0; ; taken++ {
			cur := offers
			if taken >= 8 {
				cur = nil
			}
			d := flow.Decision{Type: "decision", Site: fmt.Sprintf("decide#%d", taken), Offers: append([]flow.Offer{}, cur...), Rule: rule, Shadow: true}
			g, p := flow.Propensities(rule, d.Offers)
			a := draw(p, rng.Float64())
			d.Greedy, d.Propensity = g, p[a]
			d.Taken = a
			if a == len(d.Offers) {
				d.Taken = -1
			}
			r.Decisions = append(r.Decisions, d)
			if d.Taken < 0 {
				break
			}
			o := offers[a]
			asked[o.Tool+string(o.Args)] = true
			offers = append(offers[:a:a], offers[a+1:]...)
		}
		s.Runs = append(s.Runs, r)
	}
	return s
}

func draw(p []float64, u float64) int {
	acc, last := 0.0, len(p)-1
	for i, x := range p {
		if x <= 0 {
			continue
		}
		acc += x
		last = i
		if u < acc {
			return i
		}
	}
	return last
}

// writeStore writes the sessions to a new store as ingest would, 500
// episodes a transaction.
func writeStore(ctx context.Context, path string, sessions evaluate.Sessions) error {
	db, err := store.Open(ctx, path)
	if err != nil {
		return err
	}
	defer db.Close()
	for lo := 0; lo < len(sessions); lo += 500 {
		u := store.Unit{Flows: map[string]*store.Flow{}}
		for _, s := range sessions[lo:min(lo+500, len(sessions))] {
			u.Episodes = append(u.Episodes, s.Episode)
			fl := &store.Flow{}
			line := 0
			for ri, r := range s.Runs {
				for di, d := range r.Decisions {
					line++
					fl.Decisions = append(fl.Decisions, store.Decision{Session: s.Episode.ID, Run: ri, Index: di, Line: line, FlowDecision: d})
				}
				line++
				fl.Runs = append(fl.Runs, store.Run{Session: s.Episode.ID, Index: ri, Line: line,
					FlowRun: flow.RunRecord{Type: "run", Call: r.Call, Rule: flow.Rule{Decider: flow.Reach, Threshold: 0.3, Epsilon: 0.3}, Shadow: true}})
			}
			u.Flows[s.Episode.ID] = fl
		}
		if _, err := db.Put(ctx, u); err != nil {
			return err
		}
	}
	return nil
}
