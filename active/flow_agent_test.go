package active

import (
	"testing"
	"time"

	"github.com/hoist-mcp/hoist/flow"
)

// The agent's model (--agent-model) reaches the flow: a flow whose
// held-out counts are kept by model refuses the lookup to the model whose
// offers of it rarely hit, serves it to the model whose offers hit, and to
// a model it has not seen (backed off to every model's rate), as the fit
// does (issue 26, lever 2).
func TestFlowGatedByAgentModel(t *testing.T) {
	f, err := flow.Load("testdata/demo.flow.json")
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
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	for agent, want := range map[string]bool{"careful": true, "hasty": false, "unseen": true, "": true} {
		d := newDriver(t, Config{Server: "hoist-mcp-demo", Session: "s", FlowLog: true, Flow: &FlowConfig{
			Flow: f, Rule: flow.Rule{Decider: flow.Reach, Threshold: flow.DefaultThreshold},
			Caps: flow.Caps{PerCall: 1, PerSession: 100}, LookupTimeout: time.Second, Agent: agent,
		}})
		d.host(call("7", "lookup", `{"text":"a"}`))
		taken, acts := d.server(result("7", `{"next":"b"}`, false))
		if !taken {
			t.Fatalf("agent %q: the agent's answer was not held for the run: %s", agent, describe(acts))
		}
		st := one[Step](t, acts)
		_, acts = d.handle(Stepped{Step: st.ID})
		looked := len(only[ToServer](acts)) > 0
		if looked != want {
			t.Errorf("agent %q: looked up %v, want %v: %s", agent, looked, want, describe(acts))
		}
		if !want && len(only[ToHost](acts)) != 1 {
			t.Errorf("agent %q: the answer was not handed back at once: %s", agent, describe(acts))
		}
	}
}
