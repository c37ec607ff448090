package proxy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/internal/testbin"
)

// The guards and hoist_commit in front of hoist-mcp-demo --world retail
// (issue 10): each test drives the built binaries, and the shop journals
// every call it serves (--calls-log), which is the server's own record of
// what reached it.

// toolCall is a tools/call line of the host's.
func toolCall(id int, tool, args string) string {
	return `{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}` + "\n"
}

// shop returns the command line of the retail demo journaling its calls,
// and the journal's path.
func shop(t *testing.T) ([]string, string) {
	t.Helper()
	journal := filepath.Join(t.TempDir(), "calls.jsonl")
	return []string{testbin.Build(t, "hoist-mcp-demo"), "--world", "retail", "--calls-log", journal}, journal
}

// served calls: what the shop's journal says it was asked, "tool {args}".
func servedCalls(t *testing.T, journal string) []string {
	t.Helper()
	data, err := os.ReadFile(journal)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if l == "" {
			continue
		}
		var c struct {
			Tool string          `json:"tool"`
			Args json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			t.Fatalf("journal line %q: %v", l, err)
		}
		out = append(out, c.Tool+" "+string(c.Args))
	}
	return out
}

// openShop starts hoist-mcp with args in front of the shop and opens the
// session; it returns the initialize and tools/list answers.
func openShop(t *testing.T, env []string, args ...string) (p *proc, journal, initAnswer, listAnswer string) {
	t.Helper()
	server, journal := shop(t)
	p = startProxy(t, env, append(append(args, "--"), server...)...)
	p.send(init16(1), `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n")
	return p, journal, p.readLine(), p.readLine()
}

// result reads a tools/call answer: its text, isError and structuredContent.
type result struct {
	ID     json.RawMessage `json:"id"`
	Result struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError    bool            `json:"isError"`
		Structured json.RawMessage `json:"structuredContent"`
	} `json:"result"`
}

func readResult(t *testing.T, line string) result {
	t.Helper()
	var r result
	if err := json.Unmarshal([]byte(line), &r); err != nil || len(r.Result.Content) == 0 {
		t.Fatalf("not a tool result: %v: %s", err, line)
	}
	return r
}

func (r result) text() string { return r.Result.Content[0].Text }

// guardsLines reads a guards log.
type guardsLine struct {
	Type     string          `json:"type"`
	ID       json.RawMessage `json:"id"`
	Commit   json.RawMessage `json:"commit"`
	Tool     string          `json:"tool"`
	Refused  string          `json:"refused"`
	Refusal  string          `json:"refusal"`
	Verdicts []struct {
		Rule     string `json:"rule"`
		Verdict  string `json:"verdict"`
		Enforced bool   `json:"enforced"`
	} `json:"verdicts"`
}

func readGuardsLog(t *testing.T, path string) []guardsLine { return readJSONL[guardsLine](t, path) }

// readJSONL reads a log of JSON lines, each into a T.
func readJSONL[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l T
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: line %q: %v", path, sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// sessionLog reads the one session log in dir (its sidecars left out).
func sessionLog(t *testing.T, dir string) []logLine {
	t.Helper()
	all, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	var paths []string
	for _, p := range all {
		if !strings.HasSuffix(p, ".flow.jsonl") && !strings.HasSuffix(p, ".guards.jsonl") {
			paths = append(paths, p)
		}
	}
	if len(paths) != 1 {
		t.Fatalf("want one session log in %s, found %v", dir, paths)
	}
	data, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	var lines []logLine
	for i, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		if i == 0 {
			continue // the header
		}
		var ll logLine
		if err := json.Unmarshal(l, &ll); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		lines = append(lines, ll)
	}
	return lines
}

const refusedReason = `{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"Refused by the policy check, so cancel_pending_order was not run and nothing changed: 'found it cheaper' is not an accepted reason (policy check retail.cancel_reason)"}],"isError":true}}` + "\n"

// TestGuardsRefuseBeforeTheServer: a write an enforced rule refuses never
// reaches the server, and the agent gets the manual's text; a write the
// rules allow goes through; every write's verdicts are in the guards log and
// every refusal in the session log as the proxy's.
func TestGuardsRefuseBeforeTheServer(t *testing.T) {
	dir := t.TempDir()
	p, journal, _, _ := openShop(t, nil, "--record", dir, "--domain", "retail", "--guards")
	p.send(toolCall(3, "find_user_id_by_email", `{"email":"c7@example.com"}`))
	p.readLine()
	p.send(toolCall(4, "get_order_details", `{"order_id":"#W8a"}`))
	p.readLine()

	p.send(toolCall(5, "cancel_pending_order", `{"order_id":"#W7a","reason":"found it cheaper"}`))
	if got := p.readLine(); got != refusedReason {
		t.Errorf("the agent got\n%s\nwant\n%s", got, refusedReason)
	}
	// Another user's order, which the shop would cancel.
	p.send(toolCall(6, "cancel_pending_order", `{"order_id":"#W8a","reason":"no longer needed"}`))
	if r := readResult(t, p.readLine()); !r.Result.IsError || !strings.Contains(r.text(), "order #W8a is user_8's, and this conversation is with user_7") ||
		!strings.HasSuffix(r.text(), "(policy check retail.one_user)") {
		t.Errorf("cancel of another user's order: %+v", r)
	}
	p.send(toolCall(7, "cancel_pending_order", `{"order_id":"#W7a","reason":"no longer needed"}`))
	if r := readResult(t, p.readLine()); r.Result.IsError || !strings.Contains(r.text(), `"status": "cancelled"`) {
		t.Errorf("an allowed cancel: %+v", r)
	}
	p.send(toolCall(8, "get_order_details", `{"order_id":"#W8a"}`))
	if r := readResult(t, p.readLine()); !strings.Contains(r.text(), `"status": "pending"`) {
		t.Errorf("#W8a after the refusal: %s", r.text())
	}
	if rest, code := p.finish(); code != 0 || rest != "" {
		t.Fatalf("exit %d, more output %q; stderr:\n%s", code, rest, p.stderr)
	}

	want := []string{
		`find_user_id_by_email {"email":"c7@example.com"}`,
		`get_order_details {"order_id":"#W8a"}`,
		`cancel_pending_order {"order_id":"#W7a","reason":"no longer needed"}`,
		`get_order_details {"order_id":"#W8a"}`,
	}
	if diff := cmp.Diff(want, servedCalls(t, journal)); diff != "" {
		t.Errorf("what reached the shop (-want +got):\n%s", diff)
	}

	guardsLogs, _ := filepath.Glob(filepath.Join(dir, "*.guards.jsonl"))
	if len(guardsLogs) != 1 {
		t.Fatalf("want one guards log beside the session log, got %v", guardsLogs)
	}
	checks := readGuardsLog(t, guardsLogs[0])
	var got []string
	for _, c := range checks {
		got = append(got, string(c.ID)+" "+c.Tool+" refused:"+c.Refused)
		if len(c.Verdicts) == 0 {
			t.Errorf("check %s has no verdicts", c.ID)
		}
	}
	if diff := cmp.Diff([]string{"5 cancel_pending_order refused:retail.cancel_reason", "6 cancel_pending_order refused:retail.one_user", "7 cancel_pending_order refused:"}, got); diff != "" {
		t.Errorf("guards log (-want +got):\n%s", diff)
	}
	var refusals int
	for _, l := range sessionLog(t, dir) {
		if l.From == "proxy" && strings.Contains(string(l.Message), "Refused by the policy check") {
			refusals++
		}
	}
	if refusals != 2 {
		t.Errorf("%d refusals logged as the proxy's, want 2", refusals)
	}
}

// TestGuardsFactsFromAppendedLookups: the lookups a flow appended to a
// result are facts, whether this proxy's flow made them or a flow in front
// of the server (another hoist-mcp) did. The agent only looked its user
// up; the flow's lookups showed its order and payment methods, so the rule
// knows the 25.00 gift card cannot pay for #W7a.
func TestGuardsFactsFromAppendedLookups(t *testing.T) {
	flowFile := filepath.Join(testbin.Root(), "testdata", "flows", "tau2-retail.flow.json")
	for _, tc := range []struct {
		name  string
		proxy []string
	}{
		{"this proxy's flow", []string{"--domain", "retail", "--guards", "--flow", flowFile}},
		{"a flow in front of the server", []string{"--domain", "retail", "--guards", "--",
			testbin.Build(t, "hoist-mcp"), "--domain", "retail", "--flow", flowFile}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, journal, _, _ := openShop(t, nil, tc.proxy...)
			p.send(toolCall(3, "find_user_id_by_email", `{"email":"c7@example.com"}`))
			if item := lookedUp(t, p.readLine()); !strings.Contains(item, `get_order_details {"order_id":"#W7a"}:`) {
				t.Fatalf("the flow did not look the order up: %q", item)
			}
			p.send(toolCall(4, "modify_pending_order_payment", `{"order_id":"#W7a","payment_method_id":"gift_card_2000007"}`))
			r := readResult(t, p.readLine())
			if !r.Result.IsError || !strings.Contains(r.text(), "gift card gift_card_2000007 has a balance of 25.00, less than the order's total of 253.89 (policy check retail.gift_card_balance)") {
				t.Errorf("the write's answer: %s", r.text())
			}
			p.finish()
			for _, c := range servedCalls(t, journal) {
				if strings.HasPrefix(c, "modify_pending_order_payment") {
					t.Errorf("the refused write reached the shop: %s", c)
				}
			}
		})
	}
}

// commitCall is a hoist_commit of calls.
func commitCall(id int, calls ...string) string {
	return toolCall(id, "hoist_commit", `{"calls":[`+strings.Join(calls, ",")+`]}`)
}

func inner(tool, args string) string { return `{"name":"` + tool + `","arguments":` + args + `}` }

// commitSteps reads a hoist_commit answer's steps as "status tool".
func commitSteps(t *testing.T, r result) []string {
	t.Helper()
	var sc struct {
		Calls []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
			Text   string `json:"text"`
		} `json:"calls"`
	}
	if err := json.Unmarshal(r.Result.Structured, &sc); err != nil {
		t.Fatalf("structuredContent %s: %v", r.Result.Structured, err)
	}
	var out []string
	for _, c := range sc.Calls {
		out = append(out, c.Status+" "+c.Name)
	}
	return out
}

// checkCommitSession runs the same hoist_commit session over any transport:
// do sends one host line and returns the answer. It checks the list, the
// instructions, the calls' order, the stop at the first refusal and at the
// first failure, the results, and what reached the shop.
func checkCommitSession(t *testing.T, initAnswer, listAnswer string, do func(line string) string, journal func() []string) {
	t.Helper()
	var in struct {
		Result struct {
			Instructions string `json:"instructions"`
		} `json:"result"`
	}
	json.Unmarshal([]byte(initAnswer), &in)
	if !strings.HasPrefix(in.Result.Instructions, "A tiny shop") || !strings.HasSuffix(in.Result.Instructions,
		"\n\nWhen the user has confirmed several changes, make them in one step with hoist_commit, which runs the calls in order, checks each against the policy first, and stops at the first that is refused or fails.") {
		t.Errorf("instructions %q: want the shop's, then hoist_commit's sentence", in.Result.Instructions)
	}
	var list struct {
		Result struct {
			Tools []struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	json.Unmarshal([]byte(listAnswer), &list)
	var names []string
	for _, tl := range list.Result.Tools {
		names = append(names, tl.Name)
	}
	if want := []string{"find_user_id_by_email", "get_user_details", "get_order_details", "cancel_pending_order", "modify_pending_order_payment", "hoist_commit"}; !cmp.Equal(names, want) {
		t.Errorf("tools %v, want the shop's and hoist_commit last", names)
	}

	do(toolCall(3, "find_user_id_by_email", `{"email":"c7@example.com"}`))
	do(toolCall(4, "get_order_details", `{"order_id":"#W7b"}`))
	// A write of the agent's own that an enforced rule refuses.
	if r := readResult(t, do(toolCall(9, "cancel_pending_order", `{"order_id":"#W7b","reason":"found it cheaper"}`))); !r.Result.IsError ||
		r.text() != "Refused by the policy check, so cancel_pending_order was not run and nothing changed: 'found it cheaper' is not an accepted reason (policy check retail.cancel_reason)" {
		t.Errorf("the agent's own refused write: %+v", r)
	}
	// The first call is made, the second refused, the third not run.
	r := readResult(t, do(commitCall(5,
		inner("modify_pending_order_payment", `{"order_id":"#W7b","payment_method_id":"paypal_1000007"}`),
		inner("cancel_pending_order", `{"order_id":"#W7b","reason":"found it cheaper"}`),
		inner("cancel_pending_order", `{"order_id":"#W7b","reason":"no longer needed"}`))))
	if diff := cmp.Diff([]string{"done modify_pending_order_payment", "refused cancel_pending_order", "not_run cancel_pending_order"}, commitSteps(t, r)); diff != "" {
		t.Errorf("first commit's steps (-want +got):\n%s", diff)
	}
	if !r.Result.IsError || !strings.HasPrefix(r.text(), "hoist_commit stopped at call 2 of 3, which was refused by the policy check") ||
		!strings.Contains(r.text(), "'found it cheaper' is not an accepted reason (policy check retail.cancel_reason)") {
		t.Errorf("first commit's answer: %s", r.text())
	}
	// Every call done: the answer is no error, with each result.
	r = readResult(t, do(commitCall(6,
		inner("cancel_pending_order", `{"order_id":"#W7b","reason":"no longer needed"}`),
		inner("get_order_details", `{"order_id":"#W7b"}`))))
	if diff := cmp.Diff([]string{"done cancel_pending_order", "done get_order_details"}, commitSteps(t, r)); diff != "" || r.Result.IsError {
		t.Errorf("second commit's steps (-want +got):\n%s (isError %v)", diff, r.Result.IsError)
	}
	if strings.Count(r.text(), `"status": "cancelled"`) != 2 {
		t.Errorf("second commit's answer lacks the calls' results: %s", r.text())
	}
	// The server fails the first call: the second is not run. The session
	// never showed #W9a, so the guards lack the facts and let it through.
	r = readResult(t, do(commitCall(7,
		inner("modify_pending_order_payment", `{"order_id":"#W9a","payment_method_id":"gift_card_1000009"}`),
		inner("cancel_pending_order", `{"order_id":"#W9a","reason":"no longer needed"}`))))
	if diff := cmp.Diff([]string{"failed modify_pending_order_payment", "not_run cancel_pending_order"}, commitSteps(t, r)); diff != "" {
		t.Errorf("third commit's steps (-want +got):\n%s", diff)
	}
	if !strings.Contains(r.text(), "Error: The new payment method should be different from the current one") {
		t.Errorf("third commit's answer lacks the server's error: %s", r.text())
	}
	// Arguments that are not the schema's: nothing is run.
	if r := readResult(t, do(toolCall(8, "hoist_commit", `{"calls":[]}`))); !r.Result.IsError || !strings.Contains(r.text(), `hoist_commit made no call: "calls" is empty`) {
		t.Errorf("an empty commit: %s", r.text())
	}

	want := []string{
		`find_user_id_by_email {"email":"c7@example.com"}`,
		`get_order_details {"order_id":"#W7b"}`,
		`modify_pending_order_payment {"order_id":"#W7b","payment_method_id":"paypal_1000007"}`,
		`cancel_pending_order {"order_id":"#W7b","reason":"no longer needed"}`,
		`get_order_details {"order_id":"#W7b"}`,
		`modify_pending_order_payment {"order_id":"#W9a","payment_method_id":"gift_card_1000009"}`,
	}
	if diff := cmp.Diff(want, journal()); diff != "" {
		t.Errorf("what reached the shop, in order (-want +got):\n%s", diff)
	}
}

// TestCommitStdio runs hoist_commit in front of a command, and checks that
// the session log keeps its calls as the proxy's and the guards log knows
// which commit each checked call was made for.
func TestCommitStdio(t *testing.T) {
	dir := t.TempDir()
	p, journal, initAnswer, listAnswer := openShop(t, nil, "--record", dir, "--domain", "retail", "--guards", "--commit")
	checkCommitSession(t, initAnswer, listAnswer, func(line string) string {
		p.send(line)
		return p.readLine()
	}, func() []string { return servedCalls(t, journal) })
	if rest, code := p.finish(); code != 0 || rest != "" {
		t.Fatalf("exit %d, more output %q; stderr:\n%s", code, rest, p.stderr)
	}
	var commitReqs, commitAnswers []string
	for _, l := range sessionLog(t, dir) {
		s := string(l.Message)
		switch {
		case l.From == "proxy" && strings.Contains(s, `"id":"hoist-commit-`):
			commitReqs = append(commitReqs, s)
		case l.From == "server" && strings.Contains(s, `"id":"hoist-commit-`):
			commitAnswers = append(commitAnswers, s)
		}
	}
	if len(commitReqs) != 4 || len(commitAnswers) != 4 {
		t.Errorf("%d of the proxy's calls for hoist_commit and %d answers logged, want 4 and 4", len(commitReqs), len(commitAnswers))
	}
	guardsLogs, _ := filepath.Glob(filepath.Join(dir, "*.guards.jsonl"))
	if len(guardsLogs) != 1 {
		t.Fatalf("guards logs %v", guardsLogs)
	}
	var commits []string // "<hoist_commit id> <call id>"
	for _, c := range readGuardsLog(t, guardsLogs[0]) {
		commits = append(commits, string(c.Commit)+" "+string(c.ID))
	}
	if diff := cmp.Diff([]string{" 9", `5 "hoist-commit-1"`, `5 "hoist-commit-2"`, `6 "hoist-commit-3"`, `7 "hoist-commit-5"`}, commits); diff != "" {
		t.Errorf("the guards log's checks of commit calls (-want +got):\n%s", diff)
	}

	// The episode of this log: each hoist_commit's calls are the agent's,
	// in a hoist_commit's turn (the unit test in episode tells them
	// apart), the refused one with its refusal.
	ep, err := episode.ReadLog(strings.TrimSuffix(guardsLogs[0], ".guards.jsonl")+".jsonl", episode.Options{})
	if err != nil {
		t.Fatal(err)
	}
	commitTurns := map[int]bool{}
	for _, c := range ep.Calls() {
		if c.Tool == "hoist_commit" {
			commitTurns[c.Turn] = true
		}
	}
	var calls []string
	for _, c := range ep.Calls() {
		if c.Tool == "hoist_commit" || c.By != episode.Agent || c.ID == "3" || c.ID == "4" {
			continue
		}
		calls = append(calls, fmt.Sprintf("%s %s error:%v commit's turn:%v", c.ID, c.Tool, c.Result != nil && c.Result.IsError, commitTurns[c.Turn]))
	}
	want := []string{
		"9 cancel_pending_order error:true commit's turn:false",
		`"hoist-commit-1" modify_pending_order_payment error:false commit's turn:true`,
		" cancel_pending_order error:true commit's turn:true",
		`"hoist-commit-3" cancel_pending_order error:false commit's turn:true`,
		`"hoist-commit-4" get_order_details error:false commit's turn:true`,
		`"hoist-commit-5" modify_pending_order_payment error:true commit's turn:true`,
	}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("the episode's calls by the agent (-want +got):\n%s", diff)
	}
}

// TestCommitWithoutGuards: without --guards, hoist_commit checks nothing,
// and a call the server fails stops it.
func TestCommitWithoutGuards(t *testing.T) {
	p, journal, _, listAnswer := openShop(t, nil, "--commit")
	if !strings.Contains(listAnswer, `"name":"hoist_commit"`) {
		t.Fatalf("no hoist_commit listed: %s", listAnswer)
	}
	p.send(commitCall(3,
		inner("cancel_pending_order", `{"order_id":"#W7a","reason":"found it cheaper"}`),
		inner("cancel_pending_order", `{"order_id":"#W7b","reason":"no longer needed"}`)))
	r := readResult(t, p.readLine())
	if diff := cmp.Diff([]string{"failed cancel_pending_order", "not_run cancel_pending_order"}, commitSteps(t, r)); diff != "" || !strings.Contains(r.text(), "Error: Invalid reason") {
		t.Errorf("steps (-want +got):\n%s\n%s", diff, r.text())
	}
	p.finish()
	if got := servedCalls(t, journal); len(got) != 1 || !strings.Contains(got[0], "found it cheaper") {
		t.Errorf("the shop served %v, want the first cancel only", got)
	}
}

// TestCommitInstructionsWhenServerGivesNone: the sentence becomes the
// instructions of a server that gave none.
func TestCommitInstructionsWhenServerGivesNone(t *testing.T) {
	cmd, env := fake("answer")
	p := startProxy(t, env, append([]string{"--commit", "--"}, cmd...)...)
	p.send(init16(1))
	got := p.readLine()
	if !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":1,"result":{"instructions":"When the user has confirmed several changes, make them in one step with hoist_commit`) {
		t.Errorf("initialize answer: %s", got)
	}
	p.finish()
}

// startShopHTTP starts the shop over Streamable HTTP, journaling its calls.
func startShopHTTP(t *testing.T) (url, journal string) {
	t.Helper()
	journal = filepath.Join(t.TempDir(), "calls.jsonl")
	return startDemoHTTP(t, "--world", "retail", "--calls-log", journal), journal
}

// TestGuardsCommitUpstream: the refusal and hoist_commit in front of a
// Streamable HTTP server.
func TestGuardsCommitUpstream(t *testing.T) {
	url, journal := startShopHTTP(t)
	p := startProxy(t, nil, "--upstream", url, "--domain", "retail", "--guards", "--commit")
	p.send(init16(1))
	initAnswer := p.readLine()
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n")
	listAnswer := p.readLine()
	do := func(line string) string {
		p.send(line)
		return p.readLine()
	}
	checkCommitSession(t, initAnswer, listAnswer, do, func() []string { return servedCalls(t, journal) })
	if got := do(toolCall(5, "cancel_pending_order", `{"order_id":"#W7a","reason":"found it cheaper"}`)); got != refusedReason {
		t.Errorf("the refusal over --upstream:\n%s\nwant\n%s", got, refusedReason)
	}
	if _, code := p.finish(); code != 0 {
		t.Errorf("exit %d; stderr:\n%s", code, p.stderr)
	}
	for _, c := range servedCalls(t, journal) {
		if strings.Contains(c, "#W7a") {
			t.Errorf("the refused cancel reached the shop: %s", c)
		}
	}
}

// TestGuardsCommitListen: the refusal and hoist_commit for a host over
// Streamable HTTP.
func TestGuardsCommitListen(t *testing.T) {
	server, journal := shop(t)
	l := startListen(t, append([]string{"--domain", "retail", "--guards", "--commit", "--"}, server...)...)
	opened, sid, post := openJSONSession(t, l)
	listAnswer := post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	checkCommitSession(t, opened, listAnswer, post, func() []string { return servedCalls(t, journal) })
	if got := post(toolCall(5, "cancel_pending_order", `{"order_id":"#W7a","reason":"found it cheaper"}`)); got != strings.TrimSpace(refusedReason) {
		t.Errorf("the refusal over --listen:\n%s\nwant\n%s", got, refusedReason)
	}
	l.do("DELETE", "", session(sid))
	l.cmd.Process.Signal(syscall.SIGTERM)
	if code := l.wait(); code != 0 {
		t.Errorf("exit %d", code)
	}
	for _, c := range servedCalls(t, journal) {
		if strings.Contains(c, "#W7a") {
			t.Errorf("the refused cancel reached the shop: %s", c)
		}
	}
}

// TestGuardsBytesExact: with --guards and --commit, whatever the proxy does
// not answer itself is forwarded byte for byte, both ways.
func TestGuardsBytesExact(t *testing.T) {
	corpus := append([]byte(toolCall(90, "get_order_details", `{"order_id" : "#W1a"}`)), hostileCorpus()...)
	tee := filepath.Join(t.TempDir(), "server-received")
	cmd, env := fake("echo", "HOIST_FAKE_TEE="+tee)
	p := startProxy(t, env, append([]string{"--record", t.TempDir(), "--domain", "retail", "--guards", "--commit", "--"}, cmd...)...)
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(p.stdout)
		got <- b
	}()
	p.send(string(corpus))
	p.stdin.Close()
	back := <-got
	if code := p.wait(); code != 0 {
		t.Fatalf("exit %d: %s", code, p.stderr)
	}
	checkEchoed(t, tee, back, corpus)
}

// TestGuardsBatch: a batch (MCP 2025-03-26) cannot carry a write past the
// guards. One with a refused write, or with hoist_commit, reaches the server
// not at all, and the proxy answers it with a batch of its own; one whose
// writes are all allowed goes on byte for byte; a write sent as a
// notification, which could be neither refused nor answered, is dropped.
// The server's side (a tee of what it read) proves what reached it.
func TestGuardsBatch(t *testing.T) {
	tee := filepath.Join(t.TempDir(), "server-received")
	cmd, env := fake("echo", "HOIST_FAKE_TEE="+tee)
	p := startProxy(t, env, append([]string{"--domain", "retail", "--guards", "--commit", "--"}, cmd...)...)
	refusedBatch := `[` + strings.TrimSpace(toolCall(10, "cancel_pending_order", `{"order_id":"#W7a","reason":"found it cheaper"}`)) + `,` +
		strings.TrimSpace(toolCall(11, "get_order_details", `{"order_id":"#W7a"}`)) + `,{"jsonrpc":"2.0","method":"notifications/progress","params":{}}]` + "\n"
	p.send(refusedBatch)
	var answers []result
	if err := json.Unmarshal([]byte(p.readLine()), &answers); err != nil || len(answers) != 2 {
		t.Fatalf("the refused batch's answer: %v, %d answers", err, len(answers))
	}
	if a := answers[0]; string(a.ID) != "10" || !a.Result.IsError || !strings.HasSuffix(a.text(), "'found it cheaper' is not an accepted reason (policy check retail.cancel_reason)") {
		t.Errorf("the refused write's answer: %+v", a)
	}
	if a := answers[1]; string(a.ID) != "11" || !a.Result.IsError || !strings.HasPrefix(a.text(), "Not run: another call of the same batch was refused") {
		t.Errorf("the other call's answer: %+v", a)
	}

	p.send(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"cancel_pending_order","arguments":{"order_id":"#W7a","reason":"no longer needed"}}}` + "\n")
	allowed := `[` + strings.TrimSpace(toolCall(12, "cancel_pending_order", `{"order_id":"#W7a","reason":"no longer needed"}`)) + `, ` +
		strings.TrimSpace(toolCall(13, "get_order_details", `{"order_id":"#W7a"}`)) + `]` + "\n"
	p.send(allowed)
	if got := p.readLine(); got != allowed {
		t.Errorf("the allowed batch came back as\n%s\nwant it byte for byte\n%s", got, allowed)
	}

	p.send(`[` + strings.TrimSpace(commitCall(14, inner("get_order_details", `{"order_id":"#W7a"}`))) + `]` + "\n")
	answers = nil
	if err := json.Unmarshal([]byte(p.readLine()), &answers); err != nil || len(answers) != 1 ||
		answers[0].text() != "hoist_commit was not run: send it on its own, not in a batch" {
		t.Errorf("a batch with hoist_commit: %v %+v", err, answers)
	}
	if rest, code := p.finish(); code != 0 || rest != "" {
		t.Fatalf("exit %d, more output %q; stderr:\n%s", code, rest, p.stderr)
	}
	received, err := os.ReadFile(tee)
	if err != nil {
		t.Fatal(err)
	}
	if string(received) != allowed {
		t.Errorf("the server read\n%s\nwant only the allowed batch\n%s", received, allowed)
	}
	if !strings.Contains(p.stderr.String(), "dropped a tools/call notification of cancel_pending_order") {
		t.Errorf("stderr does not say the notification was dropped:\n%s", p.stderr.String())
	}
}

// TestGuardsSharedLogKeptWhenSessionFails: a --listen session whose server
// cannot start leaves no guards log of its own, but a --guards-log that
// sessions share, appended to, keeps every line other sessions wrote.
func TestGuardsSharedLogKeptWhenSessionFails(t *testing.T) {
	dir := t.TempDir()
	shared := filepath.Join(dir, "guards.jsonl")
	if err := os.WriteFile(shared, []byte(`{"type":"check","id":1}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l := startListen(t, "--record", dir, "--domain", "retail", "--guards", "--guards-log", shared, "--", filepath.Join(dir, "no-such-server"))
	if r := l.do("POST", strings.TrimSpace(init16(1)), func(r *http.Request) { r.Header.Set("Accept", "application/json") }); r.status != http.StatusBadGateway {
		t.Fatalf("initialize with a server that cannot start: %d %s", r.status, r.body)
	}
	l.cmd.Process.Signal(syscall.SIGTERM)
	l.wait()
	if b, err := os.ReadFile(shared); err != nil || string(b) != `{"type":"check","id":1}`+"\n" {
		t.Errorf("the shared guards log after a failed session: %q, %v", b, err)
	}
}
