package flow_test

import (
	"encoding/json"
	"fmt"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
)

// Serving a flow as hoist-mcp does: record each of the agent's calls and
// results, run the flow after a result, make the lookups it takes, log each
// decision and the run.
func ExampleSession() {
	f, err := flow.Parse([]byte(`{
  "hoist_flow": 1, "domain": "retail", "servers": ["retail"], "folds": 0, "min_support": 2, "arbiter": false,
  "learned": {"episodes": 10, "tasks": 10, "sources": ["mcp"], "digest": ""},
  "tools": {
    "find_user_id_by_email": {"server": "retail", "kind": "read"},
    "get_user_details": {"server": "retail", "kind": "read", "input": {"user_id": {"type": "string", "required": true}}}
  },
  "sites": [{"tool": "find_user_id_by_email", "failed": false, "count": {"n": 10},
    "lookups": [{"tool": "get_user_details", "reach": {"n": 9}, "habit": {"n": 8},
      "bindings": [{"args": {"user_id": "$text"}, "matched": {"n": 9}}]}]}]
}`), "retail.flow.json")
	if err != nil {
		panic(err)
	}
	s, err := flow.NewSession(f, flow.Options{Rule: flow.Rule{Decider: flow.Reach, Threshold: flow.DefaultThreshold}, Caps: flow.DefaultCaps, TaskID: "session-1"})
	if err != nil {
		panic(err) // errors.Is(err, flow.ErrUnknownServer): say so, serve nothing
	}
	// tools/list, when the server answers it.
	s.Listed([]episode.Tool{{Name: "get_user_details", Kind: episode.Read,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"user_id":{"type":"string"}},"required":["user_id"]}`)}})

	i := s.Call("find_user_id_by_email", json.RawMessage(`{"email":"c7@example.com"}`))
	s.Result(i, "user_7", false)
	run := s.Run(i)
	for {
		d := run.Next() // log d: one flow-log line
		if d.Taken < 0 {
			break
		}
		o := d.Offers[d.Taken]
		fmt.Printf("%s: look up %s %s (P %.1f × %.1f, propensity %.0f)\n", d.Site, s.CallName(o.Tool), o.Args, o.PReach, o.PBinding, d.Propensity)
		run.Answer(`{"user_id":"user_7","orders":["#W7a"]}`, false) // the server's answer to hoist-1
	}
	rec := run.End() // log rec: the run line
	line, _ := json.Marshal(rec.Sites)
	fmt.Printf("run %s: sites %s, surprise %.2f nats\n", rec.Call, line, rec.Surprise)
	// Output:
	// decide#0: look up get_user_details {"user_id":"user_7"} (P 0.9 × 1.0, propensity 1)
	// run find_user_id_by_email: sites [["decide#0","get_user_details {\"user_id\":\"user_7\"}",0],["obs#0","ok",-0.6931471805599453],["decide#1","stop",0]], surprise 0.69 nats
}
