package flow

import (
	"encoding/json"
	"testing"

	"github.com/hoist-mcp/hoist/binding"
	"github.com/hoist-mcp/hoist/episode"
)

// A decision and its run marshal to the flow log's bytes as they always
// have: bindings as their expressions, a binding without arguments as
// null, the reason and shadow only when set, a logp of −Inf as null.
func TestLoggedBytes(t *testing.T) {
	f := &Flow{
		Version: Version, Domain: "shop", Servers: []string{"shop"}, MinSupport: 1,
		Tools: map[string]Tool{
			"find_user": {Server: "shop", Kind: episode.Read},
			"get_user":  {Server: "shop", Kind: episode.Read},
			"list_all":  {Server: "shop", Kind: episode.Read},
		},
		Sites: []Site{{Tool: "find_user", Count: Count{N: 4}, Lookups: []Lookup{
			{Tool: "get_user", Reach: Count{N: 3}, Habit: Count{N: 2}, Bindings: []Bound{{Args: map[string]binding.Expr{"id": binding.MustParse(`$result["user <id>"]`)}, Matched: Count{N: 3}}}},
			{Tool: "list_all", Reach: Count{N: 1}, Habit: Count{N: 1}, Bindings: []Bound{{Matched: Count{N: 1}}}},
		}}},
	}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := NewSession(f, Options{Rule: Rule{Decider: Habit, Threshold: 0.3}, Shadow: true})
	if err != nil {
		t.Fatal(err)
	}
	i := s.Call("find_user", json.RawMessage(`{"q":"ann"}`))
	s.Result(i, `{"user <id>":"u&1"}`, false)
	r := s.Run(i)
	var lines []string
	for d := r.Next(); ; d = r.Next() {
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
		if d.Taken < 0 {
			break
		}
	}
	b, err := json.Marshal(r.End())
	if err != nil {
		t.Fatal(err)
	}
	lines = append(lines, string(b))
	want := []string{
		`{"type":"decision","site":"decide#0","offers":[{"tool":"get_user","args":{"id":"u\u00261"},"binding":{"id":"$result[\"user \\u003cid\\u003e\"]"},"from":"find_user","p_reach":0.75,"p_habit":0.5,"p_binding":1,"support":4},{"tool":"list_all","args":{},"binding":null,"from":"find_user","p_reach":0.25,"p_habit":0.25,"p_binding":1,"support":4}],"greedy":0,"taken":0,"propensity":1,"rule":{"decider":"habit","threshold":0.3,"epsilon":0},"shadow":true}`,
		`{"type":"decision","site":"decide#1","offers":[{"tool":"list_all","args":{},"binding":null,"from":"find_user","p_reach":0.25,"p_habit":0.25,"p_binding":1,"support":4}],"greedy":-1,"taken":-1,"propensity":1,"rule":{"decider":"habit","threshold":0.3,"epsilon":0},"shadow":true}`,
		`{"type":"run","call":"find_user","failed":false,"max_lookups":8,"fold":-1,"rule":{"decider":"habit","threshold":0.3,"epsilon":0},"sites":[["decide#0","get_user {\"id\":\"u\\u00261\"}",0],["decide#1","stop",0]],"surprise":0,"shadow":true}`,
	}
	for k := range max(len(want), len(lines)) {
		if k >= len(lines) || k >= len(want) || lines[k] != want[k] {
			t.Errorf("line %d:\n got %v\nwant %v", k, at(lines, k), at(want, k))
		}
	}
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "(none)"
}
