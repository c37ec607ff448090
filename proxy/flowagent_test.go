package proxy_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/internal/testbin"
)

// hoist-mcp --agent-model reaches the flow's held-out gate: a flow whose
// held-out counts are kept by model makes the lookup for the model whose
// offers of it hit, and not for the model whose offers rarely did; a model
// it never saw is served the rate of every model (issue 26, lever 2).
func TestServeFlowByAgentModel(t *testing.T) {
	f, err := flow.Load(demoFlow)
	if err != nil {
		t.Fatal(err)
	}
	f.Arbiter = &flow.Arbiter{Features: []string{flow.FeatureBias}, Weights: []float64{0}, HeldOut: []flow.HeldOut{{
		Site: "lookup", Lookup: "lookup", Binding: 0, Offers: flow.Count{N: 30}, Hits: flow.Count{N: 11},
		Agents: map[string]flow.AgentCounts{
			"careful": {Offers: flow.Count{N: 10}, Hits: flow.Count{N: 9}},
			"hasty":   {Offers: flow.Count{N: 20}, Hits: flow.Count{N: 2}},
		},
	}}}
	data, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "by-agent.flow.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for agent, want := range map[string]bool{"careful": true, "hasty": false, "unseen": true} {
		p := startProxy(t, nil, "--record", t.TempDir(), "--flow", path, "--agent-model", agent, "--", testbin.Build(t, "hoist-mcp-demo"))
		p.send(tryIt[0]+"\n", tryIt[1]+"\n", tryIt[2]+"\n")
		p.readLine()
		p.readLine()
		p.send(call(3, `{"text":"a","next":"b"}`))
		if got := lookedUp(t, p.readLine()) != ""; got != want {
			t.Errorf("--agent-model %s: looked up %v, want %v", agent, got, want)
		}
		if rest, code := p.finish(); code != 0 || rest != "" {
			t.Fatalf("--agent-model %s: exit %d, more output %q; stderr:\n%s", agent, code, rest, p.stderr)
		}
	}
}
