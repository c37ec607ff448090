package proxy_test

import (
	"bufio"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/internal/testbin"
)

const demoFlow = "testdata/demo.flow.json"

// call is the agent's tools/call of the demo's lookup with these arguments.
func call(id int, args string) string {
	return `{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"tools/call","params":{"name":"lookup","arguments":` + args + `}}` + "\n"
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// served starts hoist-mcp with a flow in front of the demo and opens the
// session: initialize, initialized, tools/list.
func served(t *testing.T, env []string, args ...string) (*proc, string) {
	t.Helper()
	dir := t.TempDir()
	all := append([]string{"--record", dir, "--flow", demoFlow}, args...)
	p := startProxy(t, env, append(all, "--", testbin.Build(t, "hoist-mcp-demo"))...)
	p.send(tryIt[0]+"\n", tryIt[1]+"\n", tryIt[2]+"\n")
	p.readLine()
	p.readLine()
	return p, dir
}

// lookedUp returns the text item a flow appended to an answer, or "".
func lookedUp(t *testing.T, answer string) string {
	t.Helper()
	var r struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(answer), &r); err != nil {
		t.Fatalf("answer %q: %v", answer, err)
	}
	if n := len(r.Result.Content); n == 2 {
		return r.Result.Content[1].Text
	} else if n != 1 {
		t.Fatalf("answer has %d content items: %s", n, answer)
	}
	return ""
}

func flowLog(t *testing.T, dir string) (decisions []flow.Decision, runs []flow.RunRecord) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "*.flow.jsonl"))
	if len(paths) != 1 {
		t.Fatalf("want one flow log in %s, got %v", dir, paths)
	}
	f, err := os.Open(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var probe struct{ Type string }
		json.Unmarshal(sc.Bytes(), &probe)
		switch probe.Type {
		case "decision":
			var d flow.Decision
			if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
				t.Fatal(err)
			}
			decisions = append(decisions, d)
		case "run":
			var r flow.RunRecord
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			runs = append(runs, r)
		default:
			t.Fatalf("flow log line of type %q: %s", probe.Type, sc.Text())
		}
	}
	return decisions, runs
}

// TestServeFlow serves a flow in front of the demo: after the agent's
// lookup, the proxy looks up what the flow binds, hands the answer back with
// one more text item, keeps its own request and answer from the host, and
// logs the decisions and the run.
func TestServeFlow(t *testing.T) {
	p, dir := served(t, nil)
	p.send(call(3, `{"text":"a","next":"b"}`))
	answer := strings.TrimSuffix(p.readLine(), "\n")
	want := `{"id":3,"jsonrpc":"2.0","result":{"content":[{"text":"{\"next\":\"b\",\"text\":\"a\"}","type":"text"},{"type":"text","text":"` +
		`--- Also looked up automatically (current results; no need to repeat these calls) ---\n\nlookup {\"text\":\"b\"}:\n{\"text\":\"b\"}"}],"isError":false}}`
	if answer != want {
		t.Errorf("answer\n got %s\nwant %s", answer, want)
	}
	// The same lookup again, since no write: nothing to add.
	p.send(call(4, `{"text":"c","next":"b"}`))
	if item := lookedUp(t, p.readLine()); item != "" {
		t.Errorf("a lookup answered since the last write was made again: %q", item)
	}
	// A write ends what was answered; then it is looked up again.
	p.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"update","arguments":{"text":"w"}}}` + "\n")
	p.readLine()
	p.send(call(6, `{"text":"d","next":"b"}`))
	if item := lookedUp(t, p.readLine()); !strings.HasSuffix(item, "lookup {\"text\":\"b\"}:\n{\"text\":\"b\"}") {
		t.Errorf("after a write: appended %q", item)
	}
	rest, code := p.finish()
	if code != 0 || rest != "" {
		t.Fatalf("exit %d, more output %q; stderr:\n%s", code, rest, p.stderr)
	}

	_, lines, _ := readLog(t, dir)
	var proxyReqs, proxyAnswers, hoistAnswers int
	for _, l := range lines {
		s := string(l.Message)
		switch {
		case l.From == "proxy" && strings.Contains(s, `"id":"hoist-`):
			proxyReqs++
		case l.From == "proxy" && strings.Contains(s, "Also looked up automatically"):
			proxyAnswers++
		case l.From == "server" && strings.Contains(s, `"id":"hoist-`):
			hoistAnswers++
		}
	}
	if proxyReqs != 2 || hoistAnswers != 2 || proxyAnswers != 2 {
		t.Errorf("log: %d proxy requests, %d answers to them, %d answers handed back; want 2 each", proxyReqs, hoistAnswers, proxyAnswers)
	}

	decisions, runs := flowLog(t, dir)
	if len(runs) != 4 {
		t.Fatalf("want a run after each of the agent's 4 calls, got %d", len(runs))
	}
	f, err := flow.Load(demoFlow)
	if err != nil {
		t.Fatal(err)
	}
	if d := decisions[0]; d.Site != "decide#0" || d.Taken != 0 || len(d.Offers) != 1 || d.Propensity != 1 || string(d.Offers[0].Args) != `{"text":"b"}` {
		t.Errorf("first decision %+v", d)
	}
	// Each run re-scores to its logged logp given its decisions.
	k := 0
	for _, run := range runs {
		n := 0
		for _, s := range run.Sites {
			if strings.HasPrefix(s.Address, "decide#") {
				n++
			}
		}
		again, err := flow.Rescore(f, run.Rule, decisions[k:k+n], run)
		if err != nil {
			t.Fatal(err)
		}
		k += n
		if math.Abs(again.LogPolicy()-run.LogPolicy()) > 1e-12 || math.Abs(again.Surprise-run.Surprise) > 1e-9 {
			t.Errorf("run re-scores to logp %v surprise %v, logged %v %v", again.LogPolicy(), again.Surprise, run.LogPolicy(), run.Surprise)
		}
	}
}

// TestServeFlowShadow checks that shadow mode logs the same decisions and
// changes no byte the agent receives.
func TestServeFlowShadow(t *testing.T) {
	p, dir := served(t, nil, "--flow-shadow")
	p.send(call(3, `{"text":"a","next":"b"}`))
	if got, want := p.readLine(), `{"id":3,"jsonrpc":"2.0","result":{"content":[{"text":"{\"next\":\"b\",\"text\":\"a\"}","type":"text"}],"isError":false}}`+"\n"; got != want {
		t.Errorf("shadow changed the answer:\n got %s\nwant %s", got, want)
	}
	p.finish()
	decisions, runs := flowLog(t, dir)
	if len(decisions) < 1 || !decisions[0].Shadow || decisions[0].Taken != 0 || len(runs) != 1 || !runs[0].Shadow {
		t.Errorf("shadow decisions %+v, runs %+v", decisions, runs)
	}
	_, lines, _ := readLog(t, dir)
	for _, l := range lines {
		if l.From == "proxy" {
			t.Errorf("shadow made a request or answer of its own: %s", l.Message)
		}
	}

	// The same call served for real decides the same at its first site.
	q, dir2 := served(t, nil)
	q.send(call(3, `{"text":"a","next":"b"}`))
	q.readLine()
	q.finish()
	real, _ := flowLog(t, dir2)
	sh, rd := decisions[0], real[0]
	sh.Shadow = false
	a, _ := json.Marshal(rd)
	b, _ := json.Marshal(sh)
	if diff := cmp.Diff(string(a), string(b)); diff != "" {
		t.Errorf("shadow's first decision differs from serving's (-served +shadow):\n%s", diff)
	}
}

// TestServeFlowNothing checks the cases where the flow looks nothing up: a
// server none of the flow's, no budget, a threshold above the score, a tool
// not in --flow-tools.
func TestServeFlowNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		said string
	}{
		{"other server", []string{"--server-name", "tickets"}, `this proxy's server is "tickets", the flow's hoist-mcp-demo`},
		{"per-call cap 0", []string{"--flow-per-call", "0"}, ""},
		{"threshold above the score", []string{"--flow-threshold", "1", "--flow-decider", "habit", "--task-id", "t"}, ""},
		{"not in --flow-tools", []string{"--flow-tools", "update"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.name == "threshold above the score" {
				// The flow's habit is 4/4 and binding 4/4: a score of 1
				// meets a threshold of 1, so raise it by checking with a
				// flow whose binding matched 3 of 4.
				args = []string{"--flow-threshold", "0.76"}
			}
			dir := t.TempDir()
			flowFile := demoFlow
			if tc.name == "threshold above the score" {
				flowFile = filepath.Join(dir, "three.flow.json")
				b, _ := os.ReadFile(demoFlow)
				os.WriteFile(flowFile, []byte(strings.Replace(string(b), `"matched": {
                "n": 4
              }`, `"matched": {
                "n": 3
              }`, 1)), 0o600)
			}
			all := append([]string{"--record", t.TempDir(), "--flow", flowFile}, args...)
			p := startProxy(t, nil, append(all, "--", testbin.Build(t, "hoist-mcp-demo"))...)
			p.send(tryIt[0]+"\n", tryIt[1]+"\n", tryIt[2]+"\n")
			p.readLine()
			p.readLine()
			p.send(call(3, `{"text":"a","next":"b"}`))
			if item := lookedUp(t, p.readLine()); item != "" {
				t.Errorf("looked up %q", item)
			}
			p.finish()
			if tc.said != "" && !strings.Contains(p.stderr.String(), tc.said) {
				t.Errorf("stderr does not say %q:\n%s", tc.said, p.stderr)
			}
		})
	}
	t.Run("threshold met at the boundary", func(t *testing.T) {
		p, _ := served(t, nil, "--flow-threshold", "1")
		p.send(call(3, `{"text":"a","next":"b"}`))
		if item := lookedUp(t, p.readLine()); item == "" {
			t.Error("a score equal to the threshold looked nothing up")
		}
		p.finish()
	})
}

// TestServeFlowExplore checks that exploring logs propensities that sum to
// one per decision and reproduce under a seed.
func TestServeFlowExplore(t *testing.T) {
	run := func(seed string) []flow.Decision {
		p, dir := served(t, nil, "--flow-explore", "0.5", "--flow-explore-seed", seed)
		for i := 0; i < 6; i++ {
			p.send(call(10+i, `{"text":"a","next":"n`+itoa(i)+`"}`))
			p.readLine()
		}
		p.finish()
		d, _ := flowLog(t, dir)
		return d
	}
	a, b := run("7"), run("7")
	if len(a) != len(b) {
		t.Fatalf("the same seed made %d and %d decisions", len(a), len(b))
	}
	for i := range a {
		if a[i].Taken != b[i].Taken || a[i].Propensity != b[i].Propensity {
			t.Errorf("decision %d differs under the same seed: %+v vs %+v", i, a[i], b[i])
		}
		if a[i].Propensity <= 0 || a[i].Propensity > 1 {
			t.Errorf("decision %d: propensity %v", i, a[i].Propensity)
		}
		_, p := flow.Propensities(a[i].Rule, a[i].Offers)
		sum := 0.0
		for _, x := range p {
			sum += x
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Errorf("decision %d: propensities sum to %v", i, sum)
		}
	}
}

// TestServeFlowServerSaysOtherwise checks the server's tools/list overrules
// the flow: no lookup of a tool it marks readOnlyHint false, nor of one whose
// input contract differs from the pinned one.
func TestServeFlowServerSaysOtherwise(t *testing.T) {
	base, err := os.ReadFile(demoFlow)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(map[string]any)
	}{
		{"contract changed", func(f map[string]any) {
			lookup := f["tools"].(map[string]any)["lookup"].(map[string]any)
			lookup["input"] = map[string]any{"text": map[string]any{"type": "string", "required": true}, "page": map[string]any{"type": "integer"}}
		}},
		{"readOnlyHint false", func(f map[string]any) {
			// The flow believes update reads; the demo marks it readOnlyHint false.
			tools := f["tools"].(map[string]any)
			tools["update"].(map[string]any)["kind"] = "read"
			l := f["sites"].([]any)[0].(map[string]any)["lookups"].([]any)[0].(map[string]any)
			l["tool"] = "update"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f map[string]any
			json.Unmarshal(base, &f)
			tc.edit(f)
			b, _ := json.Marshal(f)
			path := filepath.Join(t.TempDir(), "edited.flow.json")
			os.WriteFile(path, b, 0o600)
			p := startProxy(t, nil, "--flow", path, "--", testbin.Build(t, "hoist-mcp-demo"))
			p.send(tryIt[0]+"\n", tryIt[1]+"\n", tryIt[2]+"\n")
			p.readLine()
			p.readLine()
			p.send(call(3, `{"text":"a","next":"b"}`))
			if item := lookedUp(t, p.readLine()); item != "" {
				t.Errorf("looked up %q", item)
			}
			if _, code := p.finish(); code != 0 {
				t.Errorf("exit %d: %s", code, p.stderr)
			}
		})
	}
}

// TestServeFlowUpstream serves the flow in front of hoist-mcp-demo --http
// through --upstream: the same lookups, made as POSTs of the proxy's own.
func TestServeFlowUpstream(t *testing.T) {
	dir := t.TempDir()
	p := startProxy(t, nil, "--record", dir, "--flow", demoFlow, "--upstream", startDemoHTTP(t))
	p.send(init16(1))
	p.readLine()
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n")
	p.readLine()
	p.send(call(3, `{"text":"a","next":"b"}`))
	var answer string
	for answer == "" || !strings.Contains(answer, `"id":3`) {
		answer = p.readLine()
	}
	if item := lookedUp(t, answer); !strings.HasSuffix(item, "lookup {\"text\":\"b\"}:\n{\"text\":\"b\"}") {
		t.Errorf("appended %q", item)
	}
	if _, code := p.finish(); code != 0 {
		t.Fatalf("exit %d: %s", code, p.stderr)
	}
	if d, runs := flowLog(t, dir); len(runs) != 1 || len(d) != 2 || d[0].Taken != 0 {
		t.Errorf("flow log: %d decisions, %d runs", len(d), len(runs))
	}
}

// TestServeFlowListen serves the flow to a host over HTTP (--listen): each
// session runs the flow and keeps a flow log of its own.
func TestServeFlowListen(t *testing.T) {
	dir := t.TempDir()
	l := startListen(t, "--record", dir, "--flow", demoFlow, "--", testbin.Build(t, "hoist-mcp-demo"))
	for i := 0; i < 2; i++ {
		sid := l.initialize(nil)
		l.do("POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, session(sid))
		l.do("POST", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, session(sid))
		r := l.do("POST", strings.TrimSpace(call(3, `{"text":"a","next":"b"}`)), func(r *http.Request) {
			session(sid)(r)
			r.Header.Set("Accept", "application/json")
		})
		if item := lookedUp(t, r.body); !strings.HasSuffix(item, "lookup {\"text\":\"b\"}:\n{\"text\":\"b\"}") {
			t.Errorf("session %d: appended %q", i, item)
		}
	}
	l.cmd.Process.Signal(syscall.SIGTERM)
	if code := l.wait(); code != 0 {
		t.Errorf("exit %d", code)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.flow.jsonl"))
	if len(logs) != 2 {
		t.Errorf("want a flow log per session, got %v", logs)
	}
}

// TestServeFlowCallsDuringRuns: the agent's calls keep coming while runs
// are in flight (200 sent at once, answered concurrently by the demo), as a
// host with parallel tool calls does. Each answer reaches the host once,
// as the server sent it or with the lookup of its own result; and with the
// race detector on (tests build the binaries with -race when they run with
// it), the proxy reports no race on the flow's state.
func TestServeFlowCallsDuringRuns(t *testing.T) {
	const n = 200
	p, _ := served(t, nil)
	var lines []string
	for i := range n {
		lines = append(lines, call(100+i, `{"text":"t`+itoa(i)+`","next":"n`+itoa(i)+`"}`))
	}
	p.send(lines...)
	seen := map[int]bool{}
	withItem := 0
	for range n {
		line := p.readLine()
		var r struct {
			ID int `json:"id"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.ID < 100 || r.ID >= 100+n {
			t.Fatalf("the host got %q", line)
		}
		if seen[r.ID] {
			t.Fatalf("the host got the answer to %d twice", r.ID)
		}
		seen[r.ID] = true
		if item := lookedUp(t, line); item != "" {
			withItem++
			want := `lookup {"text":"n` + itoa(r.ID-100) + `"}:`
			if !strings.Contains(item, want) {
				t.Errorf("the answer to %d came with another call's lookup:\n%s", r.ID, item)
			}
		}
	}
	rest, code := p.finish()
	if stderr := p.stderr.String(); code != 0 || strings.Contains(stderr, "DATA RACE") || rest != "" {
		t.Fatalf("exit %d, more lines %q; stderr:\n%s", code, rest, stderr)
	}
	if withItem == 0 {
		t.Error("no answer came with a lookup")
	}
	t.Logf("%d of %d answers came with a lookup", withItem, n)
}

// TestServeFlowOtherServerName: a flow served under another server name
// than it was learned with looks nothing up, and the proxy says what to add.
func TestServeFlowOtherServerName(t *testing.T) {
	p, dir := served(t, nil, "--server-name", "fs")
	p.send(call(7, `{"text":"a","next":"b"}`))
	if item := lookedUp(t, p.readLine()); item != "" {
		t.Errorf("a lookup was made under another server's name: %q", item)
	}
	p.finish()
	if want := `add --server-name hoist-mcp-demo`; !strings.Contains(p.stderr.String(), want) {
		t.Errorf("stderr does not say %q:\n%s", want, p.stderr)
	}
	// The flow log says so too, for hosts that hide the proxy's stderr.
	paths, _ := filepath.Glob(filepath.Join(dir, "*.flow.jsonl"))
	if len(paths) != 1 {
		t.Fatalf("flow logs: %v", paths)
	}
	b, _ := os.ReadFile(paths[0])
	if !strings.HasPrefix(string(b), `{"type":"off","server":"fs","flow_servers":["hoist-mcp-demo"],"reason":`) || !strings.Contains(string(b), "add --server-name hoist-mcp-demo") {
		t.Errorf("flow log:\n%s", b)
	}
}

// TestFlowLogAppends: --flow-log FILE appends, so sessions that share the
// file (two runs of the proxy, or --listen's sessions) all log there.
func TestFlowLogAppends(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "flow.jsonl")
	for i := range 2 {
		p := startProxy(t, nil, "--flow", demoFlow, "--server-name", "hoist-mcp-demo", "--flow-log", logPath, "--", testbin.Build(t, "hoist-mcp-demo"))
		p.send(tryIt[0]+"\n", tryIt[1]+"\n")
		p.readLine()
		p.send(call(7+i, `{"text":"a","next":"b"}`))
		p.readLine()
		if _, code := p.finish(); code != 0 {
			t.Fatalf("run %d: exit %d: %s", i, code, p.stderr)
		}
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if runs := strings.Count(string(b), `{"type":"run"`); runs != 2 {
		t.Errorf("%d runs in the shared flow log, want 2 (one from each session):\n%s", runs, b)
	}
}
