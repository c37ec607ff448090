package e2e

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hoist-mcp/hoist/internal/testbin"
)

// near says two sums of the same figures agree (they may be added in
// another order).
func near(a, b bounds) bool {
	return math.Abs(a.Lo-b.Lo) < 1e-6 && math.Abs(a.Est-b.Est) < 1e-6 && math.Abs(a.Hi-b.Hi) < 1e-6
}

// servedReports holds promote, drift and evaluate's rules to what audit
// says one served session's lookups earned (issue 24, item 1: every
// report asks package earned). hits and saved are audit's, of lookups.
func servedReports(t *testing.T, how, name, dir, flowFile string, lookups int, hits, saved bounds) {
	t.Helper()
	// promote scores the served runs by what their lookups earned: its
	// sites add up to audit's figures.
	var p struct {
		ServedRuns int `json:"served_runs"`
		Sites      []struct {
			Served int    `json:"served_lookups"`
			Hits   bounds `json:"hits_bounds"`
			Saved  bounds `json:"saved_turns_bounds"`
		} `json:"sites"`
	}
	out := hoist(t, "promote", "--flow", flowFile, "--sessions", dir, "--json", "-q", "--out", filepath.Join(t.TempDir(), "promoted.json"))
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("%s %s: promote --json: %v\n%s", how, name, err, out)
	}
	var ph, ps bounds
	served := 0
	for _, s := range p.Sites {
		served += s.Served
		ph = bounds{ph.Lo + s.Hits.Lo, ph.Est + s.Hits.Est, ph.Hi + s.Hits.Hi}
		ps = bounds{ps.Lo + s.Saved.Lo, ps.Est + s.Saved.Est, ps.Hi + s.Saved.Hi}
	}
	if p.ServedRuns == 0 || served != lookups || !near(ph, hits) || !near(ps, saved) {
		t.Errorf("%s %s: promote scores %d served runs, %d served lookups, hits %+v, turns saved %+v; audit %d lookups, hits %+v, turns %+v\n%s",
			how, name, p.ServedRuns, served, ph, ps, lookups, hits, saved, out)
	}

	// drift counts the lookups that earned a hit as the agent's calls, and
	// says what they earned as audit does.
	var d struct {
		Served *struct {
			Sessions int    `json:"sessions"`
			Lookups  int    `json:"lookups"`
			Hits     bounds `json:"hits"`
			Saved    bounds `json:"saved_turns"`
		} `json:"served"`
		Rates []struct {
			Lookup, Measure, Binding string
			Drift                    bool
		} `json:"rates"`
	}
	b := driftJSON(t, flowFile, dir)
	if err := json.Unmarshal(b, &d); err != nil || d.Served == nil {
		t.Errorf("%s %s: drift --json says nothing of the served session: %v\n%s", how, name, err, b)
	} else if sv := d.Served; sv.Sessions != 1 || sv.Lookups != lookups || !near(sv.Hits, hits) || !near(sv.Saved, saved) {
		t.Errorf("%s %s: drift's served %+v; audit %d lookups, hits %+v, turns %+v", how, name, *sv, lookups, hits, saved)
	}
	// One shop customer served as the flow serves is no drift: a
	// reference of the flow that met one value in it still matched. (An
	// explored session's lookups may come in another order than the
	// agent's calls, which a binding's match reads; a τ²-bench agent's
	// task may use a value the flow holds as a rare constant, which one
	// session makes 1 of 1.)
	for _, r := range d.Rates {
		if r.Drift && how == "served" {
			t.Errorf("%s %s: drift finds %s %s %s drifted in one session", how, name, r.Lookup, r.Measure, r.Binding)
		}
	}

	// evaluate's rules score the served lookups by the same estimate: the
	// rule that served (without exploration) is worth, in this session,
	// the turns saved less the detour cost of each lookup that was no hit.
	var ev struct {
		DetourCost float64 `json:"detour_cost"`
		Results    []struct {
			Rule   string `json:"rule"`
			Served *struct {
				Decisions int    `json:"decisions"`
				IPS       bounds `json:"ips"`
			} `json:"served"`
		} `json:"results"`
	}
	out = hoist(t, "evaluate", "--sessions", dir, "--json", "-q", "--reps", "100")
	if err := json.Unmarshal([]byte(out), &ev); err != nil {
		t.Fatalf("%s %s: evaluate --json: %v", how, name, err)
	}
	c := ev.DetourCost
	want := bounds{saved.Lo - (float64(lookups)-hits.Lo)*c, saved.Est - (float64(lookups)-hits.Est)*c, saved.Hi - (float64(lookups)-hits.Hi)*c}
	var rules []string
	match := false
	for _, r := range ev.Results {
		if r.Served == nil || r.Served.Decisions != lookups || !(r.Served.IPS.Lo <= r.Served.IPS.Est+1e-9 && r.Served.IPS.Est <= r.Served.IPS.Hi+1e-9) {
			t.Errorf("%s %s: evaluate's rule %s says %+v of the served lookups, want %d decisions with bounds in order", how, name, r.Rule, r.Served, lookups)
			continue
		}
		rules = append(rules, r.Rule)
		match = match || near(r.Served.IPS, want)
	}
	if how == "served" && !match {
		t.Errorf("%s %s: no rule of evaluate's (%s) is worth what audit says the serving rule earned, %+v\n%s", how, name, strings.Join(rules, ", "), want, out)
	}
}

// driftJSON runs hoist drift --json, which exits 1 when it finds drift.
func driftJSON(t *testing.T, flowFile, dir string) []byte {
	t.Helper()
	cmd := exec.Command(testbin.Build(t, "hoist"), "drift", "--flow", flowFile, "--sessions", dir, "--json", "-q")
	cmd.Env = testbin.Env()
	b, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		t.Fatalf("drift --sessions %s: %v", dir, err)
	}
	return b
}

// servedDrift: the sessions that served the flow, taken together, are no
// drift of it. Counted as recorded, the agent never made the calls the
// proxy's lookups answered, so every lookup's reach fell to nothing.
func servedDrift(t *testing.T, sessions []session, flowFile string) {
	t.Helper()
	root := t.TempDir()
	n := 0
	for _, s := range sessions {
		if s.how != "served" {
			continue
		}
		copyLogs(t, s.dir, root)
		n++
	}
	var d struct {
		Rates []struct {
			Site, Lookup, Measure string
			Drift                 bool
			Flow                  struct{ K, N int }
			Now                   struct{ K, N int } `json:"sessions"`
		} `json:"rates"`
		Served *struct {
			Sessions int `json:"sessions"`
		} `json:"served"`
	}
	b := driftJSON(t, flowFile, root)
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("drift --json: %v\n%s", err, b)
	}
	if d.Served == nil || d.Served.Sessions != n {
		t.Errorf("drift counts %+v served sessions, want %d", d.Served, n)
	}
	for _, r := range d.Rates {
		if r.Drift {
			t.Errorf("drift over %d served sessions: %s after %s, %s %d/%d in the flow, %d/%d in the sessions: drifted", n, r.Lookup, r.Site, r.Measure, r.Flow.K, r.Flow.N, r.Now.K, r.Now.N)
		}
	}
}

// TestGroundTruthTau2 holds the reports to recorded τ²-bench agents
// replayed through a served flow (issue 24, item 2): hoist-procedure
// replay plays each agent's turns back through hoist-mcp --flow in front
// of τ²-bench's retail world, skipping the calls the proxy's lookups
// answered, and its report is the truth. The flow (testdata/flows) was
// learned with folds by task, and each session is served its own task's
// fold, as hoist replay serves it.
func TestGroundTruthTau2(t *testing.T) {
	logs := filepath.Join(testbin.Root(), "testdata", "tau2", "logs", "retail", "gpt-4.1")
	flowFile := filepath.Join(testbin.Root(), "testdata", "flows", "tau2-retail.flow.json")
	metas, _ := filepath.Glob(filepath.Join(logs, "*.meta.json"))
	if len(metas) == 0 {
		t.Fatal("no τ²-bench sessions in testdata")
	}
	type replayed struct {
		name, dir string
		truth     struct {
			TurnsSkipped int `json:"turns_skipped"`
			CallsSkipped int `json:"calls_skipped"`
		}
	}
	runs := make([]replayed, len(metas))
	var wg sync.WaitGroup
	for i, meta := range metas {
		b, err := os.ReadFile(meta)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Task string `json:"task_id"`
		}
		if err := json.Unmarshal(b, &m); err != nil || m.Task == "" {
			t.Fatalf("%s: %v, no task id", meta, err)
		}
		log := strings.TrimSuffix(meta, ".meta.json") + ".jsonl"
		r := &runs[i]
		r.name, r.dir = filepath.Base(log), t.TempDir()
		ctx := filepath.Join(t.TempDir(), "context.jsonl")
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(testbin.Build(t, "hoist-procedure"), "replay", "--json", "--time-scale", "0.1", "--context", ctx, log,
				"--", testbin.Build(t, "hoist-mcp"), "--record", r.dir, "--domain", "retail", "--task-id", m.Task, "--context", ctx, "--flow", flowFile,
				"--", testbin.Build(t, "hoist-mcp-demo"), "--world", "tau2-retail")
			cmd.Env = testbin.Env()
			out, err := cmd.Output()
			if err != nil {
				t.Errorf("hoist-procedure replay %s: %v", r.name, err)
				return
			}
			if err := json.Unmarshal(out, &r.truth); err != nil {
				t.Errorf("hoist-procedure replay's report: %v\n%s", err, out)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var sumTurns, sumHits, estTurns, estHits float64
	for _, r := range runs {
		var a auditJSON
		out := hoist(t, "audit", "--flow", flowFile, "--sessions", r.dir, "--json", "-q")
		if err := json.Unmarshal([]byte(out), &a); err != nil || a.Episodes != 1 {
			t.Fatalf("%s: audit --json: %v, %d sessions\n%s", r.name, err, a.Episodes, out)
		}
		hits, saved := a.Total.HitBounds, a.Total.SavedBounds
		tr := r.truth
		t.Logf("%s: truth %d turns skipped, %d calls answered; audit turns %.2f (%.2f–%.2f), hits %.2f (%.2f–%.2f) of %d lookups",
			r.name, tr.TurnsSkipped, tr.CallsSkipped, saved.Est, saved.Lo, saved.Hi, hits.Est, hits.Lo, hits.Hi, a.Total.Lookups)
		if !saved.holds(float64(tr.TurnsSkipped)) || !hits.holds(float64(tr.CallsSkipped)) {
			t.Errorf("%s: the truth (%d turns skipped, %d calls answered) is outside audit's bounds (turns %.2f–%.2f, hits %.2f–%.2f)",
				r.name, tr.TurnsSkipped, tr.CallsSkipped, saved.Lo, saved.Hi, hits.Lo, hits.Hi)
		}
		if a.Served == 1 {
			servedReports(t, "τ²", r.name, r.dir, flowFile, a.Total.Lookups, hits, saved)
		}
		sumTurns += float64(tr.TurnsSkipped)
		sumHits += float64(tr.CallsSkipped)
		estTurns += saved.Est
		estHits += hits.Est
	}
	if sumTurns == 0 || math.Abs(estTurns-sumTurns) > 0.15*sumTurns || math.Abs(estHits-sumHits) > 0.15*sumHits {
		t.Errorf("audit estimates %.2f turns saved and %.2f hits in all, the replays' truth is %.0f and %.0f: more than 15%% apart", estTurns, estHits, sumTurns, sumHits)
	}
}
