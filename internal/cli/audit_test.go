package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/audit"
)

// TestAuditTau2 learns the τ² sample with two folds by task and audits it:
// each simulation is served the counts of the other half of the tasks only.
func TestAuditTau2(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "tau2.db")
	results, _ := filepath.Glob(tau2Path("results", "*.json"))
	args := append([]string{"ingest", "-q", "--store", db, "--tools", tau2Path("tool_kinds.json"), "--tool-schemas", tau2Path("tools.json"), "--tau2"}, results...)
	if _, errOut, code := runInProcess(t, args...); code != 0 {
		t.Fatalf("ingest: exit %d: %s", code, errOut)
	}
	for _, domain := range []string{"retail", "airline"} {
		fl := filepath.Join(dir, domain+".flow.json")
		if _, errOut, code := runInProcess(t, "learn", "-q", "--store", db, "--domain", domain, "--folds", "2", "--min-support", "1", "-o", fl); code != 0 {
			t.Fatalf("learn: exit %d: %s", code, errOut)
		}
		page := filepath.Join(dir, domain+".html")
		out, errOut, code := runInProcess(t, "audit", "--store", db, "--domain", domain, "--flow", fl, "--json", "--resamples", "200", "--html", page)
		if code != 0 {
			t.Fatalf("audit: exit %d: %s", code, errOut)
		}
		var rep audit.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("audit --json: %v\n%s", err, out)
		}
		tot := rep.Total
		if rep.Episodes == 0 || rep.Turns == 0 || tot.Hits+tot.Detours != tot.Lookups || tot.Ceiling == nil {
			t.Errorf("%s: report %+v", domain, rep)
		}
		if tot.Saved.Lo > tot.Saved.Value || tot.Saved.Value > tot.Saved.Hi {
			t.Errorf("%s: saved %+v outside its interval", domain, tot.Saved)
		}
		sum := 0
		for _, s := range rep.Sites {
			sum += s.Lookups
		}
		if sum != tot.Lookups {
			t.Errorf("%s: sites' lookups sum to %d, total %d", domain, sum, tot.Lookups)
		}
		b, err := os.ReadFile(page)
		if err != nil || !strings.Contains(string(b), "<svg") || strings.Contains(string(b), "<script") {
			t.Errorf("%s: --html page: %v", domain, err)
		}
		// τ²-bench's runs log the conversation: the flow can reach the
		// conversation ceiling, which holds the other two.
		if rep.Reaches != "conversation" || tot.CeilingConst.Value < tot.Ceiling.Value || tot.CeilingSaid.Value <= tot.CeilingConst.Value {
			t.Errorf("%s: reaches %q, ceilings %v %v %v", domain, rep.Reaches, tot.Ceiling.Value, tot.CeilingConst.Value, tot.CeilingSaid.Value)
		}
		text, _, code := runInProcess(t, "audit", "--store", db, "--domain", domain, "--flow", fl, "--resamples", "50", "--calibration")
		if code != 0 || !strings.Contains(text, "ceiling: results") || !strings.Contains(text, "A flow can reach the conversation ceiling") ||
			!strings.Contains(text, "expected calibration error") || !strings.Contains(text, "by site") && tot.Lookups > 0 {
			t.Errorf("%s: text report (exit %d):\n%s", domain, code, text)
		}
	}
}

func TestAuditFlags(t *testing.T) {
	for _, args := range [][]string{
		{"audit", "--store", "x.db"},
		{"audit", "--flow", "f.json"},
		{"audit", "--flow", "f.json", "--store", "x.db", "--threshold", "2"},
		{"audit", "--flow", "f.json", "--store", "x.db", "--decider", "oracle"},
	} {
		if _, _, code := runInProcess(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

func TestPromoteFlags(t *testing.T) {
	for _, args := range [][]string{
		{"promote", "--store", "x.db", "--out", "p.json"},
		{"promote", "--flow", "f.json", "--store", "x.db"},
		{"promote", "--flow", "f.json", "--out", "p.json"},
		{"promote", "--flow", "f.json", "--store", "x.db", "--out", "p.json", "--min-runs", "0"},
		{"promote", "--flow", "f.json", "--store", "x.db", "--out", "p.json", "--threshold", "1"},
	} {
		if _, _, code := runInProcess(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
