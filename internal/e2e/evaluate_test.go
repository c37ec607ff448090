package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hoist-mcp/hoist/internal/testbin"
)

type evalReport struct {
	Sessions, Runs, Decisions, Unusable int
	Logged                              struct {
		Lookups, Hits, Shadow int
		Value, Lo, Hi         float64
		Mismatch              int `json:"propensity_mismatch"`
	}
	Results []struct {
		Rule      string
		Estimates []struct {
			Estimator     string
			Value, Lo, Hi *float64
		}
		N, Support, Unevaluable int
		ESS                     float64
		NoSupport               int `json:"no_support"`
	}
}

// TestEvaluateExploredShadow records sessions through hoist-mcp serving a
// learned flow in shadow with exploration, and checks hoist evaluate on
// them from the built binary: every decision is scored; the logging rule
// itself (ε included) has weight 1 everywhere, so its IPS is the value as
// logged and its ESS is n (sessions); never is worth 0 and is flagged where
// the logging rule always looked up.
func TestEvaluateExploredShadow(t *testing.T) {
	logs := t.TempDir()
	var wg sync.WaitGroup
	for n := 1; n <= 4; n++ {
		file := "review-orders.jsonl"
		if n%2 == 0 {
			file = "cancel-order.jsonl"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			procedure(t, file, fmt.Sprintf("c%d@example.com", n), "--record", logs, "--domain", "retail")
		}()
	}
	wg.Wait()
	hoist := testbin.Build(t, "hoist")
	flowFile := filepath.Join(t.TempDir(), "retail.flow.json")
	learn := exec.Command(hoist, "learn", "--sessions", logs, "--domain", "retail", "--folds", "1", "--out", flowFile, "--quiet") // one fold: new customers get every count
	learn.Env = testbin.Env()
	if out, err := learn.CombinedOutput(); err != nil {
		t.Fatalf("hoist learn: %v\n%s", err, out)
	}

	explored := t.TempDir()
	files := []string{"review-orders.jsonl", "cancel-order.jsonl", "order-status.jsonl"}
	for n := 1; n <= 9; n++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			procedure(t, files[n%3], fmt.Sprintf("c%d@example.com", n+5), "--record", explored, "--domain", "retail",
				"--flow", flowFile, "--flow-shadow", "--flow-explore", "0.5", "--flow-explore-seed", fmt.Sprint(n))
		}()
	}
	wg.Wait()

	cmd := exec.Command(hoist, "evaluate", "--sessions", explored, "--json", "--reps", "500",
		"--rule", "reach:0.3:0.5", "--rule", "never", "--rule", "greedy")
	cmd.Env = testbin.Env()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hoist evaluate: %v\n%s", err, out)
	}
	var rep evalReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("evaluate's JSON: %v\n%s", err, out)
	}
	if rep.Sessions != 9 || rep.Decisions == 0 || rep.Unusable != 0 || rep.Logged.Shadow != rep.Decisions || rep.Logged.Mismatch != 0 {
		t.Fatalf("report: %d sessions, %d decisions (%d shadow), %d unusable, %d mismatched propensities",
			rep.Sessions, rep.Decisions, rep.Logged.Shadow, rep.Unusable, rep.Logged.Mismatch)
	}
	if rep.Logged.Lookups == 0 || rep.Logged.Hits == 0 || rep.Logged.Hits > rep.Logged.Lookups {
		t.Errorf("logged: %d lookups, %d hits", rep.Logged.Lookups, rep.Logged.Hits)
	}
	if len(rep.Results) != 3 {
		t.Fatalf("results: %+v", rep.Results)
	}
	self, never := rep.Results[0], rep.Results[1]
	ips := self.Estimates[0]
	if ips.Estimator != "IPS" || ips.Value == nil || math.Abs(*ips.Value-rep.Logged.Value) > 1e-9 || math.Abs(self.ESS-float64(self.N)) > 1e-6 {
		t.Errorf("the logging rule: IPS %v, value as logged %v; ESS %v of n %d", *ips.Value, rep.Logged.Value, self.ESS, self.N)
	}
	for _, e := range self.Estimates {
		if e.Lo == nil || e.Hi == nil || *e.Lo > rep.Logged.Value+1e-9 || *e.Hi < rep.Logged.Value-1e-9 {
			t.Errorf("the logging rule: %s interval [%v, %v] misses the value as logged %v", e.Estimator, e.Lo, e.Hi, rep.Logged.Value)
		}
	}
	for _, e := range never.Estimates {
		// SNIPS divides by the sessions' weights, all 0 when every session
		// has a decision where the logging rule always looked up: then it
		// is undefined (null), never a number.
		if e.Estimator == "SNIPS" && e.Value == nil && never.Support == 0 {
			continue
		}
		if e.Value == nil || *e.Value != 0 {
			t.Errorf("never: %s = %v, want 0", e.Estimator, e.Value)
		}
	}
	if never.NoSupport == 0 || never.Unevaluable != never.NoSupport {
		t.Errorf("never: %d decisions without support, %d unevaluable", never.NoSupport, never.Unevaluable)
	}

	// In a pipe the table is tab-separated under its header line, five
	// estimators per rule.
	cmd = exec.Command(hoist, "evaluate", "--sessions", explored, "--reps", "200", "--rule", "habit:0.5", "--rule", "never")
	cmd.Env = testbin.Env()
	tab, err := cmd.Output()
	if err != nil {
		t.Fatalf("hoist evaluate: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(tab)), "\n")
	if len(lines) != 11 || !strings.HasPrefix(lines[0], "RULE\tESTIMATOR\t") || !strings.HasPrefix(lines[1], "habit≥0.5\tIPS\t") || !strings.HasPrefix(lines[10], "never\tDR λ=50\t") {
		t.Errorf("table:\n%s", tab)
	}
}
