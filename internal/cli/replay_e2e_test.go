package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/internal/cli"
	"github.com/hoist-mcp/hoist/internal/testbin"
)

// TestReplay replays the τ² retail sample through hoist-mcp --flow in front
// of τ²-bench's world, from session logs and from the results file, and
// wants live and offline to save the same turns, the reads as recorded,
// and the proxy's recordings kept.
func TestReplay(t *testing.T) {
	logs := t.TempDir()
	found, _ := filepath.Glob(tau2Path("logs", "retail", "*", "*"))
	for _, p := range found {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(logs, filepath.Base(p)), b, 0o600)
	}
	flowFile := filepath.Join(testbin.Root(), "testdata", "flows", "tau2-retail.flow.json")
	world := []string{"--", testbin.Build(t, "hoist-mcp-demo"), "--world", "tau2-retail", "--db", tau2Path("db", "retail.json")}
	proxy := testbin.Build(t, "hoist-mcp")
	for _, tc := range []struct {
		name   string
		source []string
	}{
		{"sessions", []string{"--sessions", logs}},
		{"results", []string{"--tau2", tau2Path("results", "retail-gpt-4.1.json")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			args := append(append([]string{"replay", "-q", "--flow", flowFile, "--proxy", proxy, "--time-scale", "0", "--out", out, "--json"}, tc.source...), world...)
			stdout, stderr, code := runInProcess(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var rep cli.ReplayReport
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatalf("%v\n%s", err, stdout)
			}
			if len(rep.Domains) != 1 || len(rep.Episodes) != 2 {
				t.Fatalf("report: %d domains, %d episodes", len(rep.Domains), len(rep.Episodes))
			}
			d := rep.Domains[0]
			if d.Domain != "retail" || d.Episodes != 2 || d.Failed != 0 || d.Agree != 2 || d.Saved == 0 || float64(d.Saved) != d.OfflineSaved {
				t.Errorf("retail: %d episodes (%d failed), %d agree, %d saved live, %.0f offline", d.Episodes, d.Failed, d.Agree, d.Saved, d.OfflineSaved)
			}
			if d.ResultsCompared == 0 || d.ResultsMatched != d.ResultsCompared || d.Audit == nil || d.Audit.Episodes != 2 {
				t.Errorf("retail: %d of %d reads as recorded; audit %+v", d.ResultsMatched, d.ResultsCompared, d.Audit)
			}
			if d.Live == nil || d.Live.Total.Saved.Value != d.SavedOfToolTurns || d.Live.Total.Lookups != d.Lookups {
				t.Errorf("retail: the live figures summed as an audit: %+v", d.Live)
			}
			if d.LLMTurns <= d.ToolTurns || d.SavedOfLLMTurns >= d.SavedOfToolTurns || d.Precision == nil {
				t.Errorf("retail: %d LLM turns, %d with calls; saved %.3f of LLM turns, %.3f of tool turns; precision %v",
					d.LLMTurns, d.ToolTurns, d.SavedOfLLMTurns, d.SavedOfToolTurns, d.Precision)
			}
			// Every proxy recorded its session, and each conversation was kept.
			if d.InferenceChecked != 2 {
				t.Errorf("%d live sessions found in what the proxies recorded, want 2", d.InferenceChecked)
			}
			ctxs, _ := filepath.Glob(filepath.Join(out, "context", "*.jsonl"))
			if len(ctxs) != 2 {
				t.Errorf("%d conversations kept, want 2", len(ctxs))
			}
			text, _, code := runInProcess(t, append(append([]string{"replay", "-q", "--flow", flowFile, "--proxy", proxy, "--time-scale", "0"}, tc.source...), world...)...)
			if code != 0 || !strings.Contains(text, "the same turns saved live and offline in 2 of 2 episodes") || !strings.Contains(text, "episodes/s") {
				t.Errorf("text report (exit %d):\n%s", code, text)
			}
		})
	}
}

// TestReplayFailure: an episode whose replay fails is named, the others
// are still reported, and hoist replay exits 1.
func TestReplayFailure(t *testing.T) {
	flowFile := filepath.Join(testbin.Root(), "testdata", "flows", "tau2-retail.flow.json")
	stdout, stderr, code := runInProcess(t, "replay", "--flow", flowFile, "--proxy", testbin.Build(t, "hoist-mcp"), "--time-scale", "0", "--timeout", "5s",
		"--tau2", tau2Path("results", "retail-gpt-4.1.json"), "--json", "--", "false")
	if code != 1 || !strings.Contains(stderr, "hoist: replaying retail-gpt-4.1#89af04d0") || !strings.Contains(stderr, "2 replays of 2 failed (named above)") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	var rep cli.ReplayReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || len(rep.Domains) != 1 || rep.Domains[0].Failed != 2 {
		t.Errorf("report: %v\n%s", err, stdout)
	}
}
