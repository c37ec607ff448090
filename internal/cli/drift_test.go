package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/drift"
	"github.com/hoist-mcp/hoist/flow"
)

// TestDriftExitCodes runs the built binary: a flow against the sessions it
// was learned from has no drift (0); the same flow with a tool's contract
// changed, a tool it never saw, a lookup's reach moved and a site missing
// has drift (1); a missing flow or a bad flag is an error (2).
func TestDriftExitCodes(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	copyTestdata(t, filepath.Join("tau2", "logs", "retail"), logs)
	store := filepath.Join(dir, "hoist.db")
	learned := filepath.Join(dir, "retail.flow.json")
	mustRun(t, "learn", "--sessions", logs, "--store", store, "--domain", "retail", "--min-support", "1", "-o", learned)

	r := run(t, nil, "drift", "--flow", learned, "--store", store, "--sessions", logs)
	if r.code != 0 || !strings.Contains(r.stdout, "no drift") {
		t.Fatalf("drift against its own sessions: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	f, err := flow.Load(learned)
	if err != nil {
		t.Fatal(err)
	}
	tool := f.Tools["get_order_details"]
	tool.Input = flow.Contract{"order_id": {Type: "integer", Required: true}}
	f.Tools["get_order_details"] = tool
	delete(f.Tools, "calculate") // the sessions list it: added
	var moved string
	for i := range f.Sites {
		s := &f.Sites[i]
		if s.Tool == "get_order_details" && !s.Failed {
			// As if the agent had made no lookup after it in 1,000 calls.
			if len(s.Count.Folds) > 0 {
				s.Count.Folds[0] += 1000 - s.Count.N
			}
			s.Count.N = 1000
			moved = s.Lookups[0].Tool
		}
	}
	missing := f.Sites[0]
	f.Sites = f.Sites[1:] // a site the sessions have with count ≥ 1
	f.MinSupport = 1
	b, _ := f.Marshal()
	drifted := filepath.Join(dir, "drifted.flow.json")
	os.WriteFile(drifted, b, 0o600)

	r = run(t, nil, "drift", "--flow", drifted, "--store", store, "--sessions", logs, "--json")
	if r.code != 1 {
		t.Fatalf("drift: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	var rep drift.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}
	if len(rep.Contracts) != 1 || rep.Contracts[0].Tool != "get_order_details" {
		t.Errorf("contracts changed: %+v", rep.Contracts)
	}
	if len(rep.Added) != 1 || rep.Added[0] != "calculate" {
		t.Errorf("tools added: %v", rep.Added)
	}
	if len(rep.NewSites) != 1 || rep.NewSites[0].Site != drift.SiteName(&missing) {
		t.Errorf("new sites: %+v, want %s", rep.NewSites, missing.Tool)
	}
	found := false
	for _, x := range rep.Rates {
		if x.Drift && x.Site == "get_order_details" && x.Lookup == moved && x.Measure == "reach" {
			found = true
		}
	}
	if !found {
		t.Errorf("reach of %s after get_order_details did not drift: %+v", moved, rep.Rates)
	}

	r = run(t, nil, "drift", "--flow", drifted, "--store", store, "--sessions", logs)
	if r.code != 1 || !strings.Contains(r.stdout, "DRIFT") || !strings.Contains(r.stdout, "drift: ") {
		t.Errorf("text: exit %d\n%s", r.code, r.stdout)
	}

	if r := run(t, nil, "drift", "--flow", filepath.Join(dir, "none.json"), "--store", store, "--sessions", logs); r.code != 2 {
		t.Errorf("missing flow: exit %d, want 2", r.code)
	}
	if r := run(t, nil, "drift", "--flow", learned, "--sessions", logs, "--alpha", "2"); r.code != 2 {
		t.Errorf("bad --alpha: exit %d, want 2", r.code)
	}
	if r := run(t, nil, "drift", "--help"); !strings.Contains(r.stdout, "0 no drift; 1 drift; 2 error") {
		t.Errorf("--help does not give the exit codes:\n%s", r.stdout)
	}
}
