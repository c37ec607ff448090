package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/internal/demo"
	"github.com/hoist-mcp/hoist/internal/testbin"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
	"github.com/hoist-mcp/hoist/procedure"
)

// fakeEnv makes the test binary a fake MCP server instead of running the
// tests (go-sdk mcp/cmd_test.go): the retail world, answering like a proxy
// that serves a flow.
const fakeEnv = "HOIST_PROCEDURE_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(fakeEnv) == "flow" {
		s := &demo.Server{Version: "test", World: flowing{demo.NewRetail(demo.DefaultRetailUsers)}}
		if err := s.Serve(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(testbin.Main(m))
}

// flowing is the retail world with a flow in front, as hoist-mcp --flow
// would serve it: after get_user_details it looks up each of the user's
// orders and appends them to the result in the manual's format.
type flowing struct{ *demo.Retail }

func (f flowing) Call(ctx context.Context, name string, args map[string]any) (any, bool) {
	r, known := f.Retail.Call(ctx, name, args)
	res, ok := r.(map[string]any)
	if !ok || name != "get_user_details" || res["isError"] == true {
		return r, known
	}
	content := res["content"].([]any)
	var u struct {
		Orders []string `json:"orders"`
	}
	json.Unmarshal([]byte(content[0].(map[string]any)["text"].(string)), &u)
	var ls []mcpmsg.Lookup
	for _, o := range u.Orders {
		lr, _ := f.Retail.Call(ctx, "get_order_details", map[string]any{"order_id": o})
		text := lr.(map[string]any)["content"].([]any)[0].(map[string]any)["text"].(string)
		args, _ := json.Marshal(map[string]string{"order_id": o})
		ls = append(ls, mcpmsg.Lookup{Tool: "get_order_details", Args: args, Text: text})
	}
	res["content"] = append(content, map[string]any{"type": "text", "text": mcpmsg.FormatLookups(ls)})
	return res, true
}

// result is a run of hoist-procedure.
type result struct {
	code   int
	stdout string
	stderr string
}

func hoistProcedure(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(testbin.Build(t, "hoist-procedure"), args...)
	cmd.Env = testbin.Env(env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return r
}

func procedureFile(name string) string {
	return filepath.Join(testbin.Root(), "testdata", "procedures", "retail", name)
}

func retailServer(t *testing.T) []string {
	return []string{testbin.Build(t, "hoist-mcp-demo"), "--world", "retail"}
}

func decodeReport(t *testing.T, r result) procedure.Report {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var rep procedure.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("the --json report: %v\n%s", err, r.stdout)
	}
	return rep
}

// calls lists the report's calls as "tool args", with "skipped " before the
// ones lookups answered.
func calls(rep procedure.Report) []string {
	var out []string
	for _, st := range rep.Steps {
		for _, c := range st.Calls {
			var args bytes.Buffer
			json.Compact(&args, c.Arguments)
			s := c.Tool + " " + args.String()
			if c.Skipped {
				s = "skipped " + s
			}
			out = append(out, s)
		}
	}
	return out
}

func TestCancelOrder(t *testing.T) {
	args := append([]string{"--think", "0", "--json", "--param", "email=c7@example.com", procedureFile("cancel-order.jsonl"), "--"}, retailServer(t)...)
	r := hoistProcedure(t, nil, args...)
	rep := decodeReport(t, r)
	want := []string{
		`find_user_id_by_email {"email":"c7@example.com"}`,
		`get_user_details {"user_id":"user_7"}`,
		`get_order_details {"order_id":"#W7a"}`,
		`get_order_details {"order_id":"#W7b"}`,
		`cancel_pending_order {"order_id":"#W7b","reason":"no longer needed"}`,
	}
	if diff := cmp.Diff(want, calls(rep)); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if rep.LLMTurns != 4 || rep.LLMTurnsSkipped != 0 || rep.Calls != 5 || rep.CallsSkipped != 0 || rep.ToolErrors != 0 {
		t.Errorf("totals: %+v", rep)
	}
	if got := rep.Steps[3].Calls[0].Text; !strings.Contains(got, `"status": "cancelled"`) {
		t.Errorf("the cancel answered %s", got)
	}
	if rep.Server.Name != "hoist-mcp-demo" || rep.Params["reason"] != "no longer needed" {
		t.Errorf("server %+v, params %v", rep.Server, rep.Params)
	}
	// The same run again reports the same, byte for byte.
	if again := hoistProcedure(t, nil, args...); again.stdout != r.stdout {
		t.Errorf("a second run reports differently:\n%s", cmp.Diff(r.stdout, again.stdout))
	}
}

// TestSingleDashFlags: the single-dash spelling of the flag package, which
// hoist-procedure parsed with before, still runs the same procedure.
func TestSingleDashFlags(t *testing.T) {
	args := append([]string{"-think", "0", "-json", "-param", "email=c8@example.com", procedureFile("cancel-order.jsonl"), "--"}, retailServer(t)...)
	rep := decodeReport(t, hoistProcedure(t, nil, args...))
	if got := calls(rep); len(got) != 5 || got[0] != `find_user_id_by_email {"email":"c8@example.com"}` || rep.LLMTurns != 4 {
		t.Errorf("calls %q, %d LLM turns", got, rep.LLMTurns)
	}
}

func TestTextReport(t *testing.T) {
	r := hoistProcedure(t, nil, append([]string{"--think", "0", "--param", "email=c2@example.com", procedureFile("review-orders.jsonl"), "--"}, retailServer(t)...)...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.SplitAfterN(r.stdout, "\n", 2)
	want := `step 1  LLM turn 1  find_user_id_by_email {"email":"c2@example.com"}
step 2  LLM turn 2  get_user_details {"user_id":"user_2"}
step 3  LLM turn 3  get_order_details {"order_id":"#W2a"}
                    get_order_details {"order_id":"#W2b"}
3 LLM turns made, 0 skipped; 4 calls made, 0 answered by lookups
`
	if !strings.HasPrefix(lines[0], "procedure review-orders (") || !strings.Contains(lines[0], "against hoist-mcp-demo") {
		t.Errorf("first line: %q", lines[0])
	}
	if diff := cmp.Diff(want, lines[1]); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	if r.stderr != "" {
		t.Errorf("stderr: %s", r.stderr)
	}
}

// readLog reads the one session log in dir.
func readLog(t *testing.T, dir string) *mcplog.Log {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(paths) != 1 {
		t.Fatalf("want one session log in %s, got %q", dir, paths)
	}
	l, err := mcplog.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// loggedCalls lists the tools/call requests the client sent in a log, as
// "tool args" with the arguments canonical.
func loggedCalls(t *testing.T, l *mcplog.Log) (methods []string, toolCalls []string) {
	t.Helper()
	for _, e := range l.Entries {
		if e.From != mcplog.FromClient {
			continue
		}
		var m struct {
			Method string `json:"method"`
			Params struct {
				Name       string          `json:"name"`
				Arguments  json.RawMessage `json:"arguments"`
				ClientInfo struct {
					Name string `json:"name"`
				} `json:"clientInfo"`
			} `json:"params"`
		}
		if err := json.Unmarshal(e.Message, &m); err != nil {
			t.Fatalf("%s:%d: %v", l.Path, e.Line, err)
		}
		methods = append(methods, m.Method)
		if m.Method == "initialize" && m.Params.ClientInfo.Name != "hoist-procedure" {
			t.Errorf("clientInfo %q", m.Params.ClientInfo.Name)
		}
		if m.Method == "tools/call" {
			var args map[string]any
			json.Unmarshal(m.Params.Arguments, &args)
			b, _ := json.Marshal(args)
			toolCalls = append(toolCalls, m.Params.Name+" "+string(b))
		}
	}
	return methods, toolCalls
}

// TestThroughRecordingProxy: the log hoist-mcp --record writes holds the
// procedure's session, every call of the report and no other.
func TestThroughRecordingProxy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	args := append([]string{"--think", "0", "--json", "--param", "email=c4@example.com", procedureFile("cancel-order.jsonl"), "--",
		testbin.Build(t, "hoist-mcp"), "--record", dir, "--domain", "retail", "--"}, retailServer(t)...)
	rep := decodeReport(t, hoistProcedure(t, nil, args...))
	l := readLog(t, dir)
	methods, toolCalls := loggedCalls(t, l)
	wantMethods := []string{"initialize", "notifications/initialized", "tools/list", "tools/call", "tools/call", "tools/call", "tools/call", "tools/call"}
	if diff := cmp.Diff(wantMethods, methods); diff != "" {
		t.Errorf("the client's lines in the log (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(calls(rep), toolCalls); diff != "" {
		t.Errorf("the log's calls against the report's (-report +log):\n%s", diff)
	}
	if l.Header.Domain == nil || *l.Header.Domain != "retail" {
		t.Errorf("header: %+v", l.Header)
	}
	var answers int
	for _, e := range l.Entries {
		if e.From == mcplog.FromServer && bytes.Contains(e.Message, []byte(`"result"`)) {
			answers++
		}
	}
	if answers != 7 {
		t.Errorf("%d answers in the log, want 7", answers)
	}
}

// TestSkipsWhatTheFlowLookedUp runs the procedure against a server that
// appends the lookups a flow would make after get_user_details: the step
// that reads each order is a skipped LLM turn, and its calls never reach the
// server; later bindings read the lookups' results.
func TestSkipsWhatTheFlowLookedUp(t *testing.T) {
	fake := []string{os.Args[0]}
	env := []string{fakeEnv + "=flow"}
	for _, viaProxy := range []bool{false, true} {
		t.Run(map[bool]string{false: "direct", true: "through hoist-mcp"}[viaProxy], func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "logs")
			server := fake
			if viaProxy {
				server = append([]string{testbin.Build(t, "hoist-mcp"), "--record", dir, "--"}, fake...)
			}
			src := `{"procedure": "cancel-after-lookups", "params": {"email": null}}
{"tool": "find_user_id_by_email", "args": {"email": "$param.email"}}
{"tool": "get_user_details", "args": {"user_id": "$last[find_user_id_by_email]"}}
{"tool": "get_order_details", "args": {"order_id": "$last[get_user_details].orders[*]"}}
{"tool": "cancel_pending_order", "args": {"order_id": "$last[get_order_details].order_id", "reason": "ordered by mistake"}}
`
			file := filepath.Join(t.TempDir(), "p.jsonl")
			os.WriteFile(file, []byte(src), 0o644)
			args := append([]string{"--think", "0", "--json", "--param", "email=c9@example.com", file, "--"}, server...)
			rep := decodeReport(t, hoistProcedure(t, env, args...))
			want := []string{
				`find_user_id_by_email {"email":"c9@example.com"}`,
				`get_user_details {"user_id":"user_9"}`,
				`skipped get_order_details {"order_id":"#W9a"}`,
				`skipped get_order_details {"order_id":"#W9b"}`,
				`cancel_pending_order {"order_id":"#W9b","reason":"ordered by mistake"}`,
			}
			if diff := cmp.Diff(want, calls(rep)); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if rep.LLMTurns != 3 || rep.LLMTurnsSkipped != 1 || rep.Calls != 3 || rep.CallsSkipped != 2 {
				t.Errorf("totals: %+v", rep)
			}
			if st := rep.Steps[2]; !st.Skipped || st.LLMTurn != 0 || !strings.Contains(st.Calls[0].Text, `"order_id": "#W9a"`) {
				t.Errorf("step 3: %+v", st)
			}
			if ls := rep.Steps[1].Calls[0].Lookups; len(ls) != 2 {
				t.Errorf("step 2's lookups: %+v", ls)
			}
			if viaProxy {
				_, toolCalls := loggedCalls(t, readLog(t, dir))
				if diff := cmp.Diff([]string{want[0], want[1], want[4]}, toolCalls); diff != "" {
					t.Errorf("the calls that reached the server (-want +got):\n%s", diff)
				}
			}
		})
	}
	// The text report says so too.
	r := hoistProcedure(t, env, append([]string{"--think", "0", "--param", "email=c9@example.com", procedureFile("review-orders.jsonl"), "--"}, fake...)...)
	for _, want := range []string{
		"step 3  skipped     get_order_details {\"order_id\":\"#W9a\"}  (answered by a lookup)\n",
		"2 LLM turns made, 1 skipped; 2 calls made, 2 answered by lookups\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the report lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestBadProcedureFile: a bad file is one line on stderr naming file:line
// and field, and exit status 2; the server is not started.
func TestBadProcedureFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, src, want string // want follows "hoist-procedure: FILE"
	}{
		{"bad binding", `{"procedure": "p"}` + "\n" + `{"tool": "find_user_id_by_email", "args": {"email": "c1@example.com"}}` + "\n" +
			`{"tool": "get_user_details", "args": {"user_id": "$last[find_user_id_by_email"}}` + "\n",
			`:3: args.user_id: binding "$last[find_user_id_by_email" at offset 6: want ] after the tool name`},
		{"unknown member", `{"procedure": "p"}` + "\n\n" + `{"tool": "x", "argz": {}}` + "\n", `:3: argz: unknown member`},
		{"not one line", `{"procedure": "p"}` + "\n" + `{"tool": "x",` + "\n" + `"args": {}}` + "\n", `:2: not JSON: the object does not end on this line (a step is one line)`},
		{"no header", `{"tool": "x"}` + "\n", `:1: procedure: the first line is the header and names the procedure: {"procedure": "name", ...}`},
		{"wrong type", `{"procedure": "p"}` + "\n" + `{"calls": {"tool": "x"}}` + "\n", `:2: calls: want an array, got a JSON object`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".jsonl")
			os.WriteFile(file, []byte(tc.src), 0o644)
			marker := filepath.Join(dir, "started")
			r := hoistProcedure(t, nil, file, "--", "sh", "-c", "touch "+marker)
			want := "hoist-procedure: " + file + tc.want + "\n"
			if r.code != 2 || r.stderr != want || r.stdout != "" {
				t.Errorf("exit %d, stderr %q, stdout %q; want exit 2 and %q", r.code, r.stderr, r.stdout, want)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("the server was started")
			}
		})
	}
}

func TestUsage(t *testing.T) {
	file := procedureFile("order-status.jsonl")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no file", []string{"--", "true"}, "no procedure file"},
		{"no server", []string{"--param", "email=x", file}, "no server command"},
		{"two files", []string{file, file, "--", "true"}, "one procedure file"},
		{"bad param", []string{"--param", "email", file, "--", "true"}, `--param "email": want NAME=VALUE`},
		{"unknown param", []string{"--param", "mail=x", file, "--", "true"}, "--param mail: " + file + " declares no such parameter (it has email)"},
		{"missing param", []string{file, "--", "true"}, file + " needs --param email=VALUE"},
		{"unknown flag", []string{"--thinking", "0", file, "--", "true"}, "unknown flag: --thinking"},
		{"unknown single-dash flag", []string{"-thinking", "0", file, "--", "true"}, "unknown shorthand flag: 't' in -thinking"},
		{"missing file", []string{"--param", "email=x", file + ".nope", "--", "true"}, file + ".nope: no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := hoistProcedure(t, nil, tc.args...)
			if r.code != 2 || !strings.HasPrefix(r.stderr, "hoist-procedure: "+tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", r.code, r.stderr, tc.want)
			}
		})
	}
	r := hoistProcedure(t, nil, "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "Usage:\n  hoist-procedure [flags] FILE -- SERVER_COMMAND") || !strings.Contains(r.stdout, "--think TIME") {
		t.Errorf("--help: exit %d\n%s", r.code, r.stdout)
	}
}

// TestRunFailures: the run itself fails with exit status 1 and says where.
func TestRunFailures(t *testing.T) {
	file := procedureFile("cancel-order.jsonl")
	t.Run("binding with no value", func(t *testing.T) {
		// No such customer: get_user_details answers an error, which has
		// no orders to read each of.
		r := hoistProcedure(t, nil, append([]string{"--think", "0", "--param", "email=nobody@example.com", file, "--"}, retailServer(t)...)...)
		if r.code != 1 || !strings.Contains(r.stderr, file+":6: step 3: get_order_details: argument order_id: $last[get_user_details].orders: not an object") {
			t.Errorf("exit %d, stderr %q", r.code, r.stderr)
		}
		if !strings.Contains(r.stdout, "step 1  LLM turn 1  find_user_id_by_email {\"email\":\"nobody@example.com\"}  error: Error: User not found") {
			t.Errorf("the report of the steps that ran:\n%s", r.stdout)
		}
	})
	t.Run("no server", func(t *testing.T) {
		r := hoistProcedure(t, nil, "--param", "email=c1@example.com", file, "--", filepath.Join(t.TempDir(), "no-such-server"))
		if r.code != 1 || !strings.Contains(r.stderr, "starting the server") {
			t.Errorf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("server exits", func(t *testing.T) {
		r := hoistProcedure(t, nil, "--param", "email=c1@example.com", file, "--", "sh", "-c", "exit 3")
		if r.code != 1 || !strings.HasPrefix(r.stderr, "hoist-procedure: initialize: ") || !strings.Contains(r.stderr, "hoist-procedure: the server: exit status 3\n") {
			t.Errorf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
}

// TestDefaultThinkGivesOneTurnPerStep: with the default think time, the
// session hoist-mcp records infers to one LLM turn per step, as hoist learn
// needs (the 500 ms rule of the manual's "LLM turns").
func TestDefaultThinkGivesOneTurnPerStep(t *testing.T) {
	if testing.Short() {
		t.Skip("thinks for real")
	}
	dir := filepath.Join(t.TempDir(), "logs")
	args := append([]string{"--json", "--param", "email=c5@example.com", procedureFile("cancel-order.jsonl"), "--",
		testbin.Build(t, "hoist-mcp"), "--record", dir, "--"}, retailServer(t)...)
	rep := decodeReport(t, hoistProcedure(t, nil, args...))
	paths, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(paths) != 1 {
		t.Fatalf("logs: %q", paths)
	}
	ep, err := episode.ReadLog(paths[0], episode.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var turns []int
	for _, c := range ep.Calls() {
		turns = append(turns, c.Turn)
	}
	var want []int
	for _, st := range rep.Steps {
		for range st.Calls {
			want = append(want, st.LLMTurn-1)
		}
	}
	if diff := cmp.Diff(want, turns); diff != "" {
		t.Errorf("the LLM turn of each call, inferred from the log (-procedure +log):\n%s", diff)
	}
}

// TestOverHTTP runs a procedure against the retail world served over
// Streamable HTTP, through hoist-mcp --upstream.
func TestOverHTTP(t *testing.T) {
	demoCmd := exec.Command(testbin.Build(t, "hoist-mcp-demo"), "--world", "retail", "--http", "127.0.0.1:0")
	demoCmd.Env = testbin.Env()
	stdout, _ := demoCmd.StdoutPipe()
	if err := demoCmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		demoCmd.Process.Signal(os.Interrupt)
		demoCmd.Wait()
	})
	url, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	run := func() procedure.Report {
		return decodeReport(t, hoistProcedure(t, nil, "--think", "0", "--json", "--param", "email=c11@example.com", procedureFile("cancel-order.jsonl"), "--",
			testbin.Build(t, "hoist-mcp"), "--upstream", strings.TrimSpace(url)))
	}
	rep := run()
	if rep.LLMTurns != 4 || rep.Calls != 5 || rep.ToolErrors != 0 || !strings.Contains(rep.Steps[3].Calls[0].Text, `"status": "cancelled"`) {
		t.Errorf("first run: %+v", rep)
	}
	// The shop lives as long as its process: the second cancel is refused.
	rep = run()
	if got := rep.Steps[3].Calls[0]; !got.IsError || got.Text != "Error: Non-pending order cannot be cancelled" {
		t.Errorf("second cancel: %+v", got)
	}
}
