package episode

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hoist-mcp/hoist/mcplog"
)

// checkEpisode checks what every Episode must hold, whatever its input:
// calls numbered in order, results naming their calls, every call in
// exactly one turn, the one its Turn names, and events holding what their
// type says.
func checkEpisode(t *testing.T, ep *Episode) {
	t.Helper()
	calls := ep.Calls()
	inTurn := make([]int, len(calls))
	for i, tn := range ep.Turns {
		if tn.Index != i {
			t.Fatalf("turn %d has index %d", i, tn.Index)
		}
		if tn.EndMS < tn.StartMS {
			t.Fatalf("turn %d ends (%d) before it starts (%d)", i, tn.EndMS, tn.StartMS)
		}
		for _, c := range tn.Calls {
			if c < 0 || c >= len(calls) {
				t.Fatalf("turn %d names call %d of %d", i, c, len(calls))
			}
			if calls[c].Turn != i {
				t.Fatalf("turn %d holds call %d, which says turn %d", i, c, calls[c].Turn)
			}
			inTurn[c]++
		}
	}
	for i, c := range calls {
		if c.Index != i {
			t.Fatalf("call %d has index %d", i, c.Index)
		}
		if inTurn[i] != 1 {
			t.Fatalf("call %d is in %d turns", i, inTurn[i])
		}
		if c.Result != nil && c.Result.CallIndex != i {
			t.Fatalf("call %d has call %d's result", i, c.Result.CallIndex)
		}
	}
	for i, ev := range ep.Events {
		n := 0
		for _, set := range []bool{ev.Message != nil, ev.Call != nil, ev.Result != nil} {
			if set {
				n++
			}
		}
		ok := n == 1 && (ev.Type == EventMessage) == (ev.Message != nil) &&
			(ev.Type == EventCall) == (ev.Call != nil) && (ev.Type == EventResult) == (ev.Result != nil)
		if !ok {
			t.Fatalf("event %d of type %q holds the wrong things", i, ev.Type)
		}
	}
}

// FuzzTau2 reads any input as a τ²-bench results file: it never panics,
// and every episode it gives is well formed.
func FuzzTau2(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(tau2Dir, "results", "*.json"))
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(smallTau2(f, data))
	}
	for _, s := range []string{
		`{"info":{"agent_info":{"llm":"m"}},"simulations":[{"id":"s","messages":[{"role":"assistant","tool_calls":[{"id":"a","name":"t","arguments":{}},{"id":"a","name":"t"}]},{"role":"tool","id":"a","content":"x"},{"role":"tool","id":"a","error":true}]}]}`,
		`{"simulations":[{"id":"s","task_id":1,"trial":2,"reward_info":{"reward":0.5},"start_time":"2025-01-01T00:00:00","messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":"2024-01-01T00:00:00Z"}]}],"info":{}}`,
		`{"simulations":[]}`, `{}`, `[]`, `{"simulations":[{"id":"x","trial":1e400}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = EachTau2(bytes.NewReader(data), "fuzz.json", Tau2Options{Kinds: ToolKinds{"airline": {"t": Read}}}, func(ep *Episode) error {
			checkEpisode(t, ep)
			for _, c := range ep.Calls() {
				if c.Turn >= len(ep.Turns) {
					t.Fatalf("call %d in turn %d of %d", c.Index, c.Turn, len(ep.Turns))
				}
			}
			return nil
		})
	})
}

// FuzzFromLog builds episodes from any input the log reader accepts: it
// never panics, and the episode is well formed, whether alone, qualified,
// or merged with a copy of itself under another server name.
func FuzzFromLog(f *testing.F) {
	logs, _ := filepath.Glob(filepath.Join(tau2Dir, "logs", "*", "*", "*[0-9].jsonl"))
	for _, p := range logs {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(withoutToolsList(data))
	}
	h := header("s", 0, "")
	for _, s := range []string{
		h + "\n" + `{"t_ms":0,"from":"client","message":[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":[1,"#W1"]}}},{"id":2,"method":"tools/call","params":7}]}`,
		h + "\n" + `{"t_ms":1,"from":"proxy","message":{"id":"hoist-1","method":"tools/call","params":{"name":"b"}}}` + "\n" + `{"t_ms":2,"from":"server","message":{"id":"hoist-1","result":{"content":"x","isError":"no"}}}`,
		h + "\n" + `{"t_ms":1,"from":"client","message":{"id":1,"method":"tools/call"}}` + "\n" + `{"t_ms":2,"from":"client","message":{"method":"notifications/cancelled","params":{"requestId":1}}}` + "\n" + `{"t_ms":3,"from":"proxy","message":{"id":1,"error":{"message":7}}}`,
		h + "\n" + `{"t_ms":1,"from":"client","message":{"id":1,"method":"tools/list"}}` + "\n" + `{"t_ms":2,"from":"server","message":{"id":1,"result":{"tools":[{"name":"a","annotations":{"readOnlyHint":1}}]}}}`,
		h + "\n" + `{"t_ms":5,"from":"context","message":{"role":"user","content":[{"text":"a"}]}}` + "\n" + `{"t_ms":-9,"from":"context","message":"x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := mcplog.NewReader(bytes.NewReader(data), "fuzz.jsonl")
		if err != nil {
			return
		}
		entries, err := r.ReadAll()
		if err != nil {
			return
		}
		log := &mcplog.Log{Header: r.Header(), Entries: entries}
		var name string
		for _, opt := range []Options{{}, {Qualify: true}} {
			ep, err := FromLog(log, opt)
			if err != nil {
				t.Fatalf("FromLog of a readable log: %v", err)
			}
			checkEpisode(t, ep)
			name = ep.Servers[0].Name
		}
		other := *log
		other.Header.ServerName = name + "-other"
		other.Header.StartedUnixMS += 3
		ep, err := FromLogs([]*mcplog.Log{log, &other}, Options{})
		if err != nil {
			t.Fatalf("FromLogs: %v", err)
		}
		checkEpisode(t, ep)
	})
}

// smallTau2 cuts a results file down to its first simulation's first
// messages: small seeds make mutations count.
func smallTau2(f *testing.F, data []byte) []byte {
	var doc struct {
		Info        json.RawMessage              `json:"info"`
		Simulations []map[string]json.RawMessage `json:"simulations"`
	}
	if err := json.Unmarshal(data, &doc); err != nil || len(doc.Simulations) == 0 {
		f.Fatalf("sample results file: %v", err)
	}
	sim := doc.Simulations[0]
	var msgs []json.RawMessage
	json.Unmarshal(sim["messages"], &msgs)
	msgs = msgs[:min(len(msgs), 10)]
	sim["messages"], _ = json.Marshal(msgs)
	out, _ := json.Marshal(map[string]any{"info": json.RawMessage(`{"agent_info":{"llm":"m"},"environment_info":{"domain_name":"airline"}}`),
		"simulations": []any{map[string]json.RawMessage{"id": sim["id"], "task_id": sim["task_id"], "trial": sim["trial"], "start_time": sim["start_time"], "reward_info": []byte(`{"reward":1}`), "messages": sim["messages"]}}})
	if err := EachTau2(bytes.NewReader(out), "seed.json", Tau2Options{}, func(*Episode) error { return nil }); err != nil {
		f.Fatalf("small seed does not read: %v", err)
	}
	return out
}

// withoutToolsList drops a log's tools/list answer, the longest line.
func withoutToolsList(data []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(data, []byte("\n")) {
		if !bytes.Contains(l, []byte(`"tools": [`)) {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}
