package episode

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hoist-mcp/hoist/mcplog"
)

const tau2Dir = "../testdata/tau2"

func loadKinds(t testing.TB) ToolKinds {
	t.Helper()
	kinds, err := LoadToolKinds(filepath.Join(tau2Dir, "tool_kinds.json"))
	if err != nil {
		t.Fatal(err)
	}
	return kinds
}

// sampleLogs maps each simulation id of a τ²-bench directory to its
// session log.
func sampleLogs(t testing.TB, dir string) map[string]string {
	t.Helper()
	metas, err := filepath.Glob(filepath.Join(dir, "logs", "*", "*", "*.meta.json"))
	if err != nil || len(metas) == 0 {
		t.Fatalf("no sample logs: %v", err)
	}
	out := map[string]string{}
	for _, m := range metas {
		data, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			SimID string `json:"sim_id"`
		}
		if err := json.Unmarshal(data, &meta); err != nil {
			t.Fatal(err)
		}
		out[meta.SimID] = strings.TrimSuffix(m, ".meta.json") + ".jsonl"
	}
	return out
}

// callView is what both routes must agree on for each call.
type callView struct {
	Turn      int
	Tool      string
	Kind      Kind
	Schema    any // the tool's input contract, decoded
	Args      any // decoded: JSON-equal, not byte-equal
	IsError   bool
	Text      string
	Cancelled bool
}

type episodeView struct {
	Domain, TaskID, AgentModel string
	Trial                      int
	Reward                     float64
	Calls                      []callView
	Turns                      [][]int
}

func view(t testing.TB, ep *Episode) episodeView {
	t.Helper()
	v := episodeView{Domain: ep.Domain, TaskID: ep.TaskID, AgentModel: ep.AgentModel, Trial: ep.Trial}
	if ep.Reward != nil {
		v.Reward = *ep.Reward
	}
	for _, c := range ep.Calls() {
		var args any
		if err := json.Unmarshal(c.Args, &args); err != nil {
			t.Fatalf("%s: call %d's arguments: %v", ep.ID, c.Index, err)
		}
		cv := callView{Turn: c.Turn, Tool: c.Tool, Args: args, Cancelled: c.Cancelled}
		if tl := ep.Tool(c.Tool); tl != nil {
			cv.Kind = tl.Kind
			if err := json.Unmarshal(tl.InputSchema, &cv.Schema); err != nil {
				t.Fatalf("%s: %s's input schema: %v", ep.ID, c.Tool, err)
			}
		}
		if c.Result != nil {
			cv.IsError, cv.Text = c.Result.IsError, c.Result.Text
		}
		v.Calls = append(v.Calls, cv)
	}
	for _, tn := range ep.Turns {
		v.Turns = append(v.Turns, tn.Calls)
	}
	return v
}

// TestTau2RoutesAgree checks that a simulation read from its τ²-bench
// results file and from its converted session log gives the same calls
// (tool, kind, input contract, arguments JSON-equal, result text and error
// flag), the same turns (exact from the results file, inferred from the
// log's timing), the same conversation, and the same task, trial, reward
// and agent model (issue 3, point 3).
func TestTau2RoutesAgree(t *testing.T) {
	routesAgree(t, tau2Dir, 5)
}

// TestTau2RoutesAgreeCorpus runs the same check over a whole τ²-bench
// directory laid out as the sample is (results/, logs/, tool_kinds.json,
// tools.json), when HOIST_TAU2_DIR names one; tests never read it
// otherwise.
func TestTau2RoutesAgreeCorpus(t *testing.T) {
	dir := os.Getenv("HOIST_TAU2_DIR")
	if dir == "" {
		t.Skip("HOIST_TAU2_DIR not set")
	}
	routesAgree(t, dir, 1)
}

func routesAgree(t *testing.T, dir string, atLeast int) {
	logs := sampleLogs(t, dir)
	kinds, err := LoadToolKinds(filepath.Join(dir, "tool_kinds.json"))
	if err != nil {
		t.Fatal(err)
	}
	schemas, err := LoadToolSchemas(filepath.Join(dir, "tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "results", "*.json"))
	if len(files) == 0 {
		t.Fatal("no results files")
	}
	n, calls := 0, 0
	for _, f := range files {
		eps, err := ReadTau2File(f, Tau2Options{Kinds: kinds, Schemas: schemas})
		if err != nil {
			t.Fatal(err)
		}
		for _, ep := range eps {
			t.Run(ep.ID, func(t *testing.T) {
				simID := strings.TrimPrefix(ep.HostSession, "tau2-")
				path, ok := logs[simID]
				if !ok {
					t.Fatalf("no session log for simulation %s", simID)
				}
				fromLog, err := ReadLog(path, Options{})
				if err != nil {
					t.Fatal(err)
				}
				a, b := view(t, ep), view(t, fromLog)
				calls += len(a.Calls)
				if diff := cmp.Diff(a, b); diff != "" {
					t.Errorf("results file (-) and session log (+) differ:\n%s", diff)
				}
				if fromLog.HostSession != ep.HostSession {
					t.Errorf("host session: log %q, results %q", fromLog.HostSession, ep.HostSession)
				}
				// The conversation: the same messages in the same order.
				if diff := cmp.Diff(messagesOf(ep), messagesOf(fromLog)); diff != "" {
					t.Errorf("messages (-results +log):\n%s", diff)
				}
			})
			n++
		}
	}
	if n < atLeast || calls == 0 {
		t.Errorf("compared %d simulations and %d calls, want at least %d simulations with calls", n, calls, atLeast)
	}
}

func messagesOf(ep *Episode) []Message {
	var out []Message
	for _, ev := range ep.Events {
		if ev.Message != nil {
			out = append(out, *ev.Message)
		}
	}
	return out
}

func TestReadTau2(t *testing.T) {
	eps, err := ReadTau2File(filepath.Join(tau2Dir, "results", "retail-gpt-4.1.json"), Tau2Options{Kinds: loadKinds(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(eps) != 2 {
		t.Fatalf("got %d episodes, want 2", len(eps))
	}
	ep := eps[0]
	if ep.ID != "retail-gpt-4.1#89af04d0-2efa-4d04-beb1-d1497d663cf0" || ep.Source != SourceTau2 || ep.Domain != "retail" ||
		ep.TaskID != "26" || ep.Trial != 0 || ep.Reward == nil || *ep.Reward != 1 || ep.AgentModel != "gpt-4.1" {
		t.Errorf("episode %q source %q domain %q task %q trial %d reward %v model %q",
			ep.ID, ep.Source, ep.Domain, ep.TaskID, ep.Trial, ep.Reward, ep.AgentModel)
	}
	if want := time.Date(2025, 8, 1, 16, 16, 36, 814778000, time.UTC); !ep.Started.Equal(want) {
		t.Errorf("Started = %v, want %v", ep.Started, want)
	}
	var turns [][]string
	for _, tn := range ep.Turns {
		var tools []string
		for _, i := range tn.Calls {
			tools = append(tools, ep.Calls()[i].Tool)
		}
		turns = append(turns, tools)
	}
	want := [][]string{
		{"find_user_id_by_name_zip"},
		{"get_user_details"},
		{"get_order_details", "get_order_details", "get_order_details", "get_order_details"},
		{"return_delivered_order_items"},
	}
	if diff := cmp.Diff(want, turns); diff != "" {
		t.Errorf("turns (-want +got):\n%s", diff)
	}
	if k := ep.Tool("return_delivered_order_items").Kind; k != Write {
		t.Errorf("return_delivered_order_items kind %s, want write", k)
	}
	if len(ep.Tools) != 16 {
		t.Errorf("%d tools, want the retail manifest's 16", len(ep.Tools))
	}
	// Events never go back in time, and each result follows its call.
	last := int64(0)
	seen := map[int]bool{}
	for _, ev := range ep.Events {
		if ev.TMS < last {
			t.Errorf("event at %d ms after one at %d ms", ev.TMS, last)
		}
		last = ev.TMS
		switch ev.Type {
		case EventCall:
			seen[ev.Call.Index] = true
		case EventResult:
			if !seen[ev.Result.CallIndex] {
				t.Errorf("result of call %d before the call", ev.Result.CallIndex)
			}
		}
	}
}

// TestTau2RepeatedCallIDs: a langchain agent reuses tool-call ids; each
// call gets the next result of its id.
func TestTau2RepeatedCallIDs(t *testing.T) {
	eps, err := ReadTau2File(filepath.Join(tau2Dir, "results", "airline-gpt-oss-120b-langchain.json"), Tau2Options{})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int{}
	for _, c := range eps[0].Calls() {
		ids[c.ID]++
		if c.Result == nil || c.Cancelled {
			t.Errorf("call %d (%s) has no result", c.Index, c.ID)
		}
		if c.Result != nil && c.Result.CallIndex != c.Index {
			t.Errorf("call %d has call %d's result", c.Index, c.Result.CallIndex)
		}
	}
	repeated := 0
	for _, n := range ids {
		if n > 1 {
			repeated++
		}
	}
	if repeated == 0 {
		t.Error("the sample no longer repeats a tool-call id")
	}
	// Without a manifest every tool is generic.
	for _, tl := range eps[0].Tools {
		if tl.Kind != Generic {
			t.Errorf("tool %s kind %s without a manifest", tl.Name, tl.Kind)
		}
	}
}

func TestEachTau2Crafted(t *testing.T) {
	sims := `[{"id":"s1","task_id":7,"trial":1,"start_time":"2025-01-01T00:00:00.000000","reward_info":null,"messages":[
	 {"role":"user","content":"hi","timestamp":"2025-01-01T00:00:01.000000"},
	 {"role":"assistant","content":"checking","tool_calls":[{"id":"a","name":"get","arguments":{"x":1},"requestor":"assistant"},{"id":"b","name":"get","arguments":{"x":2}}],"timestamp":"2025-01-01T00:00:02.000000"},
	 {"role":"tool","id":"a","content":"one","error":false,"timestamp":"2025-01-01T00:00:02.500000"},
	 {"role":"user","content":null,"tool_calls":[{"id":"u","name":"toggle_airplane_mode","arguments":{},"requestor":"user"}],"timestamp":null},
	 {"role":"tool","id":"u","content":"done","requestor":"user"},
	 {"role":"assistant","content":null,"tool_calls":[{"id":"c","name":"set","arguments":{}}],"timestamp":"2025-01-01T00:00:01.000000"},
	 {"role":"tool","id":"c","content":"Error: no","error":true}
	]}]`
	for _, order := range []string{"info first", "info last"} {
		t.Run(order, func(t *testing.T) {
			info := `"info":{"agent_info":{"llm":"m"},"environment_info":{"domain_name":"telecom"}}`
			doc := `{` + info + `,"tasks":[],"simulations":` + sims + `}`
			if order == "info last" {
				doc = `{"simulations":` + sims + `,` + info + `}`
			}
			var eps []*Episode
			err := EachTau2(strings.NewReader(doc), "dir/x.json", Tau2Options{}, func(ep *Episode) error {
				eps = append(eps, ep)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(eps) != 1 {
				t.Fatalf("%d episodes", len(eps))
			}
			ep := eps[0]
			if ep.ID != "x#s1" || ep.TaskID != "7" || ep.Trial != 1 || ep.Reward != nil || ep.AgentModel != "m" || ep.Domain != "telecom" {
				t.Errorf("episode %+v", ep)
			}
			type row struct {
				TMS  int64
				What string
			}
			var rows []row
			for _, ev := range ep.Events {
				switch ev.Type {
				case EventMessage:
					rows = append(rows, row{ev.TMS, ev.Message.Role + ": " + ev.Message.Text})
				case EventCall:
					rows = append(rows, row{ev.TMS, fmt.Sprintf("call %d %s %s turn %d cancelled %v", ev.Call.Index, ev.Call.ID, ev.Call.Tool, ev.Call.Turn, ev.Call.Cancelled)})
				case EventResult:
					rows = append(rows, row{ev.TMS, fmt.Sprintf("result %d %q error %v", ev.Result.CallIndex, ev.Result.Text, ev.Result.IsError)})
				}
			}
			want := []row{
				{1000, "user: hi"},
				{2000, "assistant: checking"},
				{2000, `call 0 "a" get turn 0 cancelled false`},
				{2000, `call 1 "b" get turn 0 cancelled true`},
				{2500, `result 0 "one" error false`},
				{2500, `call 2 "c" set turn 1 cancelled false`}, // times never go back
				{2500, `result 2 "Error: no" error true`},
			}
			if diff := cmp.Diff(want, rows); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]Turn{{Index: 0, Calls: []int{0, 1}, StartMS: 2000, EndMS: 2500}, {Index: 1, Calls: []int{2}, StartMS: 2500, EndMS: 2500}}, ep.Turns); diff != "" {
				t.Errorf("turns (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEachTau2StopsWhenAsked(t *testing.T) {
	stop := errors.New("enough")
	n := 0
	err := EachTau2(strings.NewReader(`{"info":{},"simulations":[{"id":"a","messages":[]},{"id":"b","messages":[]}]}`), "x.json", Tau2Options{},
		func(*Episode) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("EachTau2 = %v after %d episodes, want the callback's error after 1", err, n)
	}
}

func TestEachTau2Errors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"not JSON", "hello", "x.json:1: not a τ²-bench results file: invalid character 'h' looking for beginning of value"},
		{"an array", "[1]", `x.json:1: not a τ²-bench results file: want "{", got [`},
		{"no simulations", `{"info":{}}`, "x.json:1: simulations: missing: not a τ²-bench results file"},
		{"simulations not an array", `{"simulations":{}}`, `x.json:1: simulations: want "[", got {`},
		{"truncated", "{\"info\":{},\n\"simulations\":[{\"id\":\"a\",\"messages\":[", "x.json:2: simulations[0]: unexpected EOF"},
		{"message of the wrong shape", "{\"info\":{},\"simulations\":[\n{\"id\":\"a\",\"messages\":[{\"role\":3}]}]}",
			"x.json:2: simulations[0].messages[0]: role: want a string, got a JSON number"},
		{"call without a name", "{\"info\":{},\"simulations\":[\n\n{\"id\":\"a\",\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"1\"}]}]}]}",
			"x.json:3: simulations[0].messages[0].tool_calls[0].name: missing"},
		{"simulation without an id", `{"info":{},"simulations":[{"messages":[]}]}`, "x.json:1: simulations[0].id: missing"},
		{"trial not an integer", `{"info":{},"simulations":[{"id":"a","trial":1.5}]}`, "x.json:1: simulations[0].trial: want an integer, got 1.5"},
		{"info of the wrong shape", `{"info":{"agent_info":[]},"simulations":[]}`, "x.json:1: info: agent_info: want an object, got a JSON array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := EachTau2(strings.NewReader(tt.in), "x.json", Tau2Options{}, func(*Episode) error { return nil })
			if err == nil {
				t.Fatal("no error")
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got %s\nwant %s", err, tt.want)
			}
			var ie *mcplog.InputError
			if !errors.As(err, &ie) {
				t.Errorf("error %T is not an *mcplog.InputError", err)
			}
		})
	}
}

func TestLoadToolKinds(t *testing.T) {
	kinds := loadKinds(t)
	if kinds.Kind("retail", "get_user_details") != Read || kinds.Kind("airline", "book_reservation") != Write ||
		kinds.Kind("retail", "calculate") != Generic || kinds.Kind("retail", "nope") != Generic || kinds.Kind("nope", "x") != Generic {
		t.Errorf("kinds: %v", kinds)
	}
	// tools.json, the richer shape, gives the same kinds.
	rich, err := LoadToolKinds(filepath.Join(tau2Dir, "tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(kinds, rich); diff != "" {
		t.Errorf("tools.json kinds differ from tool_kinds.json (-kinds +tools.json):\n%s", diff)
	}
	for in, want := range map[string]string{
		`{"retail":{"a":"sometimes"}}`:            `retail.a: unknown tool kind "sometimes" (want read, write or generic)`,
		`{"retail":["a"]}`:                        "retail: want an object of tool names to kinds",
		`{"domains":{"d":{"t":{"kind":"nope"}}}}`: `domains.d.t.kind: unknown tool kind "nope" (want read, write or generic)`,
		"{\n\"retail\": }":                        "line 2: invalid character '}' looking for beginning of value",
	} {
		_, err := ParseToolKinds([]byte(in))
		if err == nil || err.Error() != want {
			t.Errorf("ParseToolKinds(%s) = %v, want %s", in, err, want)
		}
	}
	if _, err := LoadToolKinds(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing manifest: %v", err)
	}
}

func TestLoadToolSchemas(t *testing.T) {
	schemas, err := LoadToolSchemas(filepath.Join(tau2Dir, "tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(schemas["retail"]["get_order_details"], &s); err != nil || !cmp.Equal(s.Required, []string{"order_id"}) {
		t.Errorf("retail get_order_details schema: %s (%v)", schemas["retail"]["get_order_details"], err)
	}
	// tool_kinds.json has no schemas: a clear error, not an empty manifest.
	_, err = LoadToolSchemas(filepath.Join(tau2Dir, "tool_kinds.json"))
	if err == nil || !strings.HasSuffix(err.Error(), "tool_kinds.json: domains: missing") {
		t.Errorf("LoadToolSchemas(tool_kinds.json) = %v", err)
	}
}
