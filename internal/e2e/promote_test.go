package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/internal/testbin"
)

func hoist(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(testbin.Build(t, "hoist"), args...)
	cmd.Env = testbin.Env()
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("hoist %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return string(out)
}

// TestShadowPromoteServe is the promotion loop through the real binaries:
// learn from recorded customers, run the flow in shadow for others, promote
// it from their flow logs, and serve the promoted flow: it still looks up
// after the promoted sites, and hands back after a call whose site was not
// promoted with the reason in the flow log (manual, --flow-shadow). hoist
// audit replays the flow over the same shadow sessions.
func TestShadowPromoteServe(t *testing.T) {
	logs, shadow := t.TempDir(), t.TempDir()
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
	flowFile := filepath.Join(t.TempDir(), "retail.flow.json")
	hoist(t, "learn", "-q", "--sessions", logs, "--domain", "retail", "--folds", "1", "--out", flowFile)

	for n := 5; n <= 10; n++ {
		file := []string{"order-status.jsonl", "cancel-order.jsonl", "review-orders.jsonl"}[n%3]
		wg.Add(1)
		go func() {
			defer wg.Done()
			procedure(t, file, fmt.Sprintf("c%d@example.com", n), "--record", shadow, "--domain", "retail", "--flow", flowFile, "--flow-shadow")
		}()
	}
	wg.Wait()
	promoted := filepath.Join(t.TempDir(), "promoted.flow.json")
	var rep struct {
		ShadowRuns int `json:"shadow_runs"`
		Sites      []struct {
			Tool     string
			Promoted bool
			Reason   string
		}
	}
	out := hoist(t, "promote", "-q", "--flow", flowFile, "--sessions", shadow, "--min-runs", "2", "--oracle-cache", t.TempDir(), "--json", "--out", promoted)
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("promote --json: %v\n%s", err, out)
	}
	f, err := flow.Load(promoted)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"find_user_id_by_email": "",
		"get_user_details":      "",
		"cancel_pending_order":  "not promoted: would not pay: it looked nothing up",
	}
	for _, s := range f.Sites {
		w, ok := want[s.Tool]
		if !ok {
			continue
		}
		if s.Promoted == nil || *s.Promoted != (w == "") || w != "" && !strings.HasPrefix("not promoted: "+s.Reason, w) {
			t.Errorf("site %s: promoted %v, reason %q", s.Tool, s.Promoted, s.Reason)
		}
	}
	if rep.ShadowRuns == 0 {
		t.Errorf("no shadow runs scored: %s", out)
	}

	served := t.TempDir()
	r := procedure(t, "cancel-order.jsonl", "c3@example.com", "--record", served, "--domain", "retail", "--flow", promoted)
	if r.LLMTurnsSkipped != 2 {
		t.Errorf("the promoted flow skipped %d LLM turns, want 2", r.LLMTurnsSkipped)
	}
	logsServed, _ := filepath.Glob(filepath.Join(served, "*.flow.jsonl"))
	if len(logsServed) != 1 {
		t.Fatalf("flow logs %v", logsServed)
	}
	b, _ := os.ReadFile(logsServed[0])
	if !strings.Contains(string(b), `"reason":"not promoted: would not pay: it looked nothing up`) {
		t.Errorf("no hand-back with its reason in the flow log:\n%s", b)
	}

	var audit struct {
		Episodes int
		Total    struct {
			Lookups int
			Hits    int
		}
	}
	out = hoist(t, "audit", "-q", "--flow", flowFile, "--sessions", shadow, "--json", "--resamples", "100")
	if err := json.Unmarshal([]byte(out), &audit); err != nil || audit.Episodes != 6 || audit.Total.Lookups == 0 || audit.Total.Hits == 0 {
		t.Errorf("audit of the shadow sessions: %v\n%s", err, out)
	}
}
