package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/internal/testbin"
)

type procReport struct {
	LLMTurns        int `json:"llm_turns"`
	LLMTurnsSkipped int `json:"llm_turns_skipped"`
	Steps           []struct {
		Step    int  `json:"step"`
		Skipped bool `json:"skipped"`
		Calls   []struct {
			Tool    string `json:"tool"`
			Lookups []struct {
				Tool      string          `json:"tool"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"lookups"`
		} `json:"calls"`
	} `json:"steps"`
}

// procedure runs hoist-procedure FILE with the customer's email against the
// retail world behind hoist-mcp with proxyArgs, and returns its report.
func procedure(t *testing.T, file, email string, proxyArgs ...string) procReport {
	t.Helper()
	args := []string{"--json", "--param", "email=" + email, filepath.Join(testbin.Root(), "testdata", "procedures", "retail", file),
		"--", testbin.Build(t, "hoist-mcp")}
	args = append(args, proxyArgs...)
	args = append(args, "--", testbin.Build(t, "hoist-mcp-demo"), "--world", "retail")
	cmd := exec.Command(testbin.Build(t, "hoist-procedure"), args...)
	cmd.Env = testbin.Env()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hoist-procedure %s for %s: %v", file, email, err)
	}
	var r procReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("hoist-procedure's report: %v\n%s", err, out)
	}
	return r
}

// TestLearnAndServe is the README's loop through the real binaries: scripted
// customers recorded through the proxy, hoist learns a flow from the logs,
// and the proxy serves it to a new customer, whose procedure skips the turns
// the flow's lookups answered.
func TestLearnAndServe(t *testing.T) {
	logs := t.TempDir()
	var wg sync.WaitGroup
	for n := 1; n <= 6; n++ {
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

	flowFile := filepath.Join(t.TempDir(), "retail.flow.json")
	// One fold: this test is about serving, and a new customer's fold of
	// six sessions could leave a site below its support.
	learn := exec.Command(testbin.Build(t, "hoist"), "learn", "--sessions", logs, "--domain", "retail", "--folds", "1", "--out", flowFile, "--quiet")
	learn.Env = testbin.Env()
	if out, err := learn.CombinedOutput(); err != nil {
		t.Fatalf("hoist learn: %v\n%s", err, out)
	}

	served := t.TempDir()
	r := procedure(t, "cancel-order.jsonl", "c15@example.com", "--record", served, "--domain", "retail", "--flow", flowFile)
	type lookup struct{ Tool, Args string }
	var got []lookup
	for _, s := range r.Steps {
		for _, c := range s.Calls {
			for _, l := range c.Lookups {
				var args bytes.Buffer
				json.Compact(&args, l.Arguments)
				got = append(got, lookup{l.Tool, args.String()})
			}
		}
	}
	want := []lookup{
		{"get_user_details", `{"user_id":"user_15"}`},
		{"get_order_details", `{"order_id":"#W15a"}`},
		{"get_order_details", `{"order_id":"#W15b"}`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lookups the proxy appended (-want +got):\n%s", diff)
	}
	var skipped []int
	for _, s := range r.Steps {
		if s.Skipped {
			skipped = append(skipped, s.Step)
		}
	}
	if diff := cmp.Diff([]int{2, 3}, skipped); diff != "" || r.LLMTurns != 2 || r.LLMTurnsSkipped != 2 {
		t.Errorf("skipped steps %v (want 2 and 3), %d LLM turns made and %d skipped (want 2 and 2)", skipped, r.LLMTurns, r.LLMTurnsSkipped)
	}
	if logs, _ := filepath.Glob(filepath.Join(served, "*.flow.jsonl")); len(logs) != 1 {
		t.Errorf("want the served session's flow log, got %v", logs)
	}
}

// TestTau2FlowServesRetailWorld serves the flow learned from τ²-bench's
// retail train trajectories (testdata/flows) in front of the retail world:
// after the customer is found, the proxy looks up the user and the first
// order, as the agents in τ²-bench did, and the procedure skips that turn.
func TestTau2FlowServesRetailWorld(t *testing.T) {
	flowFile := filepath.Join(testbin.Root(), "testdata", "flows", "tau2-retail.flow.json")
	r := procedure(t, "cancel-order.jsonl", "c7@example.com", "--domain", "retail", "--flow", flowFile)
	var got []string
	for _, s := range r.Steps {
		for _, c := range s.Calls {
			for _, l := range c.Lookups {
				var args bytes.Buffer
				json.Compact(&args, l.Arguments)
				got = append(got, l.Tool+" "+args.String())
			}
		}
	}
	want := []string{`get_user_details {"user_id":"user_7"}`, `get_order_details {"order_id":"#W7a"}`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lookups (-want +got):\n%s", diff)
	}
	if len(r.Steps) != 4 || !r.Steps[1].Skipped || r.LLMTurnsSkipped != 1 {
		t.Errorf("want step 2 (get_user_details) skipped and 1 LLM turn saved; got %d skipped", r.LLMTurnsSkipped)
	}
}
