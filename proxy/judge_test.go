package proxy_test

import (
	"encoding/json"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hoist-mcp/hoist/internal/oracletest"
	"github.com/hoist-mcp/hoist/judge"
)

// The confirmation judge in front of hoist-mcp-demo --world retail (issue
// 11): the model is a fake OpenAI-compatible server on loopback, the
// conversation a --context file the test appends to as a host would.

const judgeKey = "sk-judge-test-7788"

// judgeRefusal is the agent's answer when the judge refuses cancelling #W7a.
const judgeRefusal = "Refused by the policy check, so cancel_pending_order was not run and nothing changed: the customer has not explicitly agreed to this exact change (confirmation judge: p_yes 0.15); describe the change and ask the customer to confirm it first."

// chat appends one message to a --context file.
func chat(t *testing.T, path, role, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]string{"role": role, "content": text})
	if _, err := f.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// confirmLine is what the tests read of a confirm log's line.
type confirmLine struct {
	Type     string `json:"type"`
	Tool     string `json:"tool"`
	Rule     string `json:"rule"`
	WordList string `json:"word_list"`
	Answers  []struct {
		Question string   `json:"question"`
		Key      string   `json:"key"`
		Answered bool     `json:"answered"`
		PYes     *float64 `json:"p_yes"`
		From     string   `json:"from"`
		Why      string   `json:"why"`
	} `json:"answers"`
	Failed   bool   `json:"failed"`
	Enforced bool   `json:"enforced"`
	Refusal  string `json:"refusal"`
	WaitedUS *int64 `json:"waited_us"`
	Approval *struct {
		Digest  string `json:"digest"`
		Policy  string `json:"policy"`
		Expires int64  `json:"expires_unix_ms"`
	} `json:"approval"`
}

func readConfirmLog(t *testing.T, path string) []confirmLine { return readJSONL[confirmLine](t, path) }

// judgeSession runs one conversation over any transport (do sends a host
// line and returns the answer): a cancel the customer hesitates about,
// which the model answers no (0.15), then the same cancel after a clear
// yes (0.95). It returns the two answers.
func judgeSession(t *testing.T, srv *oracletest.Server, ctxFile string, do func(string) string) (first, second string) {
	t.Helper()
	srv.Push(oracletest.WithLogprobs(0.15), oracletest.WithLogprobs(0.95))
	chat(t, ctxFile, "user", "Hi, I'm c7@example.com. Please cancel my order #W7a, I no longer need it.")
	do(toolCall(3, "find_user_id_by_email", `{"email":"c7@example.com"}`))
	do(toolCall(4, "get_order_details", `{"order_id":"#W7a"}`))
	chat(t, ctxFile, "assistant", "I will cancel order #W7a for the reason 'no longer needed'. Shall I go ahead?")
	chat(t, ctxFile, "user", "Hmm, hold on, let me think.")
	first = do(toolCall(5, "cancel_pending_order", `{"order_id":"#W7a","reason":"no longer needed"}`))
	chat(t, ctxFile, "assistant", "Of course. Shall I cancel #W7a for 'no longer needed'?")
	chat(t, ctxFile, "user", "Yes, please cancel it.")
	second = do(toolCall(6, "cancel_pending_order", `{"order_id":"#W7a","reason":"no longer needed"}`))
	reqs := srv.Requests()
	if len(reqs) == 0 || !strings.Contains(string(reqs[0].Body), "Hmm, hold on") || !strings.Contains(string(reqs[0].Body), "Shall I go ahead?") {
		t.Errorf("the model was not shown the exchange: %d requests", len(reqs))
	}
	// The second is asked only if the first went through: a cancelled
	// order is the guards' to refuse.
	if len(reqs) == 2 && !strings.Contains(string(reqs[1].Body), "Yes, please cancel it.") {
		t.Errorf("the second question does not show the customer's yes")
	}
	for _, r := range reqs {
		if r.Header.Get("Authorization") != "Bearer "+judgeKey || strings.Contains(string(r.Body), judgeKey) {
			t.Error("the key went elsewhere than the Authorization header")
		}
	}
	return first, second
}

// noKeyIn fails when the key is in any file under the dirs.
func noKeyIn(t *testing.T, dirs ...string) {
	t.Helper()
	for _, dir := range dirs {
		filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if b, _ := os.ReadFile(path); strings.Contains(string(b), judgeKey) {
					t.Errorf("the key is in %s", path)
				}
			}
			return nil
		})
	}
}

func judgeArgs(srv *oracletest.Server, ctxFile, cache, mode string) []string {
	return []string{"--domain", "retail", "--guards", "--context", ctxFile, "--confirm-judge", mode,
		"--oracle-url", srv.URL, "--oracle-model", "jev-test", "--oracle-cache", cache}
}

// TestJudgeEnforceStdio: enforce refuses the write the model says the
// customer did not agree to, before the server sees it, with the manual's
// text; the write after a yes goes through; both judgments are in the
// confirm log beside the session log, with their cache keys.
func TestJudgeEnforceStdio(t *testing.T) {
	srv := oracletest.Start(t)
	dir, tmp := t.TempDir(), t.TempDir()
	ctxFile, cache := filepath.Join(tmp, "chat.jsonl"), filepath.Join(tmp, "cache")
	p, journal, _, _ := openShop(t, []string{"TYPESAFE_API_KEY=" + judgeKey}, append([]string{"--record", dir}, judgeArgs(srv, ctxFile, cache, "enforce")...)...)
	do := func(line string) string { p.send(line); return p.readLine() }
	first, second := judgeSession(t, srv, ctxFile, do)
	if r := readResult(t, first); !r.Result.IsError || r.text() != judgeRefusal {
		t.Errorf("the hesitant cancel got %s\nwant the refusal %q", first, judgeRefusal)
	}
	if r := readResult(t, second); r.Result.IsError || !strings.Contains(r.text(), `"status": "cancelled"`) {
		t.Errorf("the confirmed cancel got %s", second)
	}
	if _, code := p.finish(); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr)
	}
	var cancels int
	var served string
	for _, c := range servedCalls(t, journal) {
		if strings.HasPrefix(c, "cancel_pending_order") {
			cancels++
			served = strings.TrimPrefix(c, "cancel_pending_order ")
		}
	}
	if cancels != 1 {
		t.Errorf("the shop cancelled %d times, want once (the refused write must not reach it)", cancels)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.confirm.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("confirm logs %v", logs)
	}
	lines := readConfirmLog(t, logs[0])
	if len(lines) != 2 || len(srv.Requests()) != 2 {
		t.Fatalf("%d judgments and %d questions, want 2 of each", len(lines), len(srv.Requests()))
	}
	l := lines[0]
	if l.Type != "judgment" || l.Tool != "cancel_pending_order" || l.Rule != "retail.confirmed" || !l.Failed || !l.Enforced || l.Refusal != judgeRefusal ||
		len(l.Answers) != 1 || l.Answers[0].Question != "confirm" || l.Answers[0].PYes == nil || math.Abs(*l.Answers[0].PYes-0.15) > 1e-9 || l.Answers[0].From != "logprobs" ||
		len(l.Answers[0].Key) != 64 || l.WaitedUS == nil {
		t.Errorf("the refused write's judgment: %+v", l)
	}
	if l := lines[1]; l.Failed || l.Enforced || l.Refusal != "" || math.Abs(*l.Answers[0].PYes-0.95) > 1e-9 || l.Answers[0].Key == lines[0].Answers[0].Key {
		t.Errorf("the confirmed write's judgment: %+v", l)
	}
	// The yes is an approval of the call the shop served, and the no
	// carries none (docs/approvals.md).
	if a := lines[1].Approval; a == nil || a.Digest != judge.CallDigest("tools/call", "cancel_pending_order", []byte(served)) ||
		a.Policy != "confirm-judge confirm/1 threshold 0.5" || a.Expires <= 0 {
		t.Errorf("the confirmed write's approval: %+v, want that of cancel_pending_order %s", a, served)
	}
	if lines[0].Approval != nil {
		t.Errorf("the refused write has an approval: %+v", lines[0].Approval)
	}
	if !strings.Contains(p.stderr.String(), "confirmation judge: refused cancel_pending_order (p_yes 0.15)") {
		t.Errorf("stderr does not say the judge refused:\n%s", p.stderr)
	}
	noKeyIn(t, dir, tmp)
}

// TestJudgeLogUpstream: in log mode the judge refuses nothing, in front of
// a Streamable HTTP server, and says in the log that the write failed but
// that this was not enforced. The second cancel then meets a cancelled
// order, which the guards refuse themselves, without asking the judge.
func TestJudgeLogUpstream(t *testing.T) {
	srv := oracletest.Start(t)
	url, journal := startShopHTTP(t)
	tmp := t.TempDir()
	ctxFile, cache, clog := filepath.Join(tmp, "chat.jsonl"), filepath.Join(tmp, "cache"), filepath.Join(tmp, "judged-{session}.jsonl")
	p := startProxy(t, []string{"TYPESAFE_API_KEY=" + judgeKey}, append([]string{"--upstream", url, "--confirm-log", clog}, judgeArgs(srv, ctxFile, cache, "log")...)...)
	p.send(init16(1))
	p.readLine()
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	do := func(line string) string { p.send(line); return p.readLine() }
	first, second := judgeSession(t, srv, ctxFile, do)
	if r := readResult(t, first); r.Result.IsError || !strings.Contains(r.text(), `"status": "cancelled"`) {
		t.Errorf("log mode refused: %s", first)
	}
	if r := readResult(t, second); !r.Result.IsError || !strings.HasSuffix(r.text(), "(policy check retail.order_status)") {
		t.Errorf("the second cancel, of a cancelled order: %s", second)
	}
	if _, code := p.finish(); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr)
	}
	if n := len(servedCalls(t, journal)); n != 3 {
		t.Errorf("the shop served %d calls, want 3 (the judged cancel among them)", n)
	}
	logs, _ := filepath.Glob(filepath.Join(tmp, "judged-*.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("--confirm-log {session}: %v", logs)
	}
	lines := readConfirmLog(t, logs[0])
	if len(lines) != 1 || !lines[0].Failed || lines[0].Enforced || lines[0].Refusal != "" || lines[0].WordList != "refuse" {
		t.Errorf("judgments in log mode: %+v", lines)
	}
	noKeyIn(t, tmp)
}

// TestJudgeEnforceListen: the same refusal for a host over Streamable
// HTTP, and a judge that cannot answer (the model fails) refuses nothing.
func TestJudgeEnforceListen(t *testing.T) {
	srv := oracletest.Start(t)
	server, journal := shop(t)
	tmp := t.TempDir()
	ctxFile, cache := filepath.Join(tmp, "chat.jsonl"), filepath.Join(tmp, "cache")
	args := append(judgeArgs(srv, ctxFile, cache, "enforce"), "--")
	l := startListenWith(t, []string{"TYPESAFE_API_KEY=" + judgeKey}, append(args, server...)...)
	_, sid, post := openJSONSession(t, l)
	first, second := judgeSession(t, srv, ctxFile, post)
	if r := readResult(t, first); !r.Result.IsError || r.text() != judgeRefusal {
		t.Errorf("over --listen the hesitant cancel got %s", first)
	}
	if r := readResult(t, second); r.Result.IsError {
		t.Errorf("over --listen the confirmed cancel got %s", second)
	}
	// The model fails for good: no answer, so the write goes on.
	srv.Default(oracletest.Response{Status: http.StatusBadRequest, Body: `{"error":{"message":"bad"}}`})
	chat(t, ctxFile, "user", "Also cancel #W7b, I do not want it either.")
	third := post(toolCall(7, "cancel_pending_order", `{"order_id":"#W7b","reason":"no longer needed"}`))
	if strings.Contains(third, "Refused by the policy check") {
		t.Errorf("a judge without an answer refused: %s", third)
	}
	l.do("DELETE", "", session(sid))
	l.cmd.Process.Signal(syscall.SIGTERM)
	if code := l.wait(); code != 0 {
		t.Errorf("exit %d", code)
	}
	var cancelled []string
	for _, c := range servedCalls(t, journal) {
		if strings.HasPrefix(c, "cancel_pending_order") {
			cancelled = append(cancelled, c)
		}
	}
	if len(cancelled) != 2 {
		t.Errorf("the shop cancelled %v, want the confirmed #W7a and the unjudged #W7b", cancelled)
	}
	noKeyIn(t, tmp)
}

// TestJudgeCommit: a call hoist_commit makes is judged as the agent's own
// are; refused, it stops the commit, and the calls after it are not run.
func TestJudgeCommit(t *testing.T) {
	srv := oracletest.Start(t)
	tmp := t.TempDir()
	ctxFile, cache := filepath.Join(tmp, "chat.jsonl"), filepath.Join(tmp, "cache")
	p, journal, _, _ := openShop(t, []string{"TYPESAFE_API_KEY=" + judgeKey}, append([]string{"--commit"}, judgeArgs(srv, ctxFile, cache, "enforce")...)...)
	do := func(line string) string { p.send(line); return p.readLine() }
	chat(t, ctxFile, "user", "I'm c7@example.com; cancel #W7a and #W7b, I no longer need them.")
	do(toolCall(3, "find_user_id_by_email", `{"email":"c7@example.com"}`))
	do(toolCall(4, "get_order_details", `{"order_id":"#W7a"}`))
	do(toolCall(5, "get_order_details", `{"order_id":"#W7b"}`))
	chat(t, ctxFile, "assistant", "I will cancel #W7a and #W7b for 'no longer needed'. Shall I?")
	chat(t, ctxFile, "user", "Only the first one, wait with the other.")
	srv.Push(oracletest.WithLogprobs(0.9), oracletest.WithLogprobs(0.15))
	r := readResult(t, do(commitCall(6,
		inner("cancel_pending_order", `{"order_id":"#W7a","reason":"no longer needed"}`),
		inner("cancel_pending_order", `{"order_id":"#W7b","reason":"no longer needed"}`),
		inner("get_order_details", `{"order_id":"#W7a"}`))))
	want := []string{"done cancel_pending_order", "refused cancel_pending_order", "not_run get_order_details"}
	if got := commitSteps(t, r); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("hoist_commit's steps %v, want %v", got, want)
	}
	if !strings.Contains(string(r.Result.Structured), "confirmation judge: p_yes 0.15") {
		t.Errorf("the refused step does not say why: %s", r.Result.Structured)
	}
	if _, code := p.finish(); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr)
	}
	for _, c := range servedCalls(t, journal) {
		if strings.Contains(c, "#W7b") && strings.HasPrefix(c, "cancel_pending_order") {
			t.Errorf("the refused cancel reached the shop: %s", c)
		}
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d questions, want one per cancel", n)
	}
}

// TestJudgeSecondShadowAndBudget: the second question in shadow is asked
// and logged but fails nothing, and once --confirm-questions is spent the
// judge has no answer ("spent") and refuses nothing.
func TestJudgeSecondShadowAndBudget(t *testing.T) {
	srv := oracletest.Start(t)
	dir, tmp := t.TempDir(), t.TempDir()
	ctxFile, cache := filepath.Join(tmp, "chat.jsonl"), filepath.Join(tmp, "cache")
	args := append([]string{"--record", dir, "--confirm-second", "proposed", "--confirm-second-shadow", "--confirm-questions", "2"},
		judgeArgs(srv, ctxFile, cache, "enforce")...)
	p, _, _, _ := openShop(t, []string{"TYPESAFE_API_KEY=" + judgeKey}, args...)
	do := func(line string) string { p.send(line); return p.readLine() }
	srv.Push(oracletest.WithLogprobs(0.9), oracletest.WithLogprobs(0.1))
	chat(t, ctxFile, "user", "I'm c7@example.com: cancel #W7a and #W7b, I no longer need them.")
	do(toolCall(3, "find_user_id_by_email", `{"email":"c7@example.com"}`))
	do(toolCall(4, "get_order_details", `{"order_id":"#W7a"}`))
	do(toolCall(5, "get_order_details", `{"order_id":"#W7b"}`))
	chat(t, ctxFile, "assistant", "Shall I cancel both?")
	chat(t, ctxFile, "user", "Yes.")
	for i, order := range []string{"#W7a", "#W7b"} {
		got := do(toolCall(6+i, "cancel_pending_order", `{"order_id":"`+order+`","reason":"no longer needed"}`))
		if r := readResult(t, got); r.Result.IsError {
			t.Errorf("cancel %s refused: %s", order, got)
		}
	}
	if _, code := p.finish(); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d questions asked, want the budget's 2", n)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.confirm.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("confirm logs %v", logs)
	}
	b, _ := os.ReadFile(logs[0])
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d judgments", len(lines))
	}
	var first, second struct {
		Failed  bool `json:"failed"`
		Answers []struct {
			Question string   `json:"question"`
			PYes     *float64 `json:"p_yes"`
			Why      string   `json:"why"`
			Shadow   bool     `json:"second_shadow"`
		} `json:"answers"`
	}
	json.Unmarshal([]byte(lines[0]), &first)
	json.Unmarshal([]byte(lines[1]), &second)
	if first.Failed || len(first.Answers) != 2 || first.Answers[1].Question != "proposed" || !first.Answers[1].Shadow || math.Abs(*first.Answers[1].PYes-0.1) > 1e-9 {
		t.Errorf("the first judgment: %s", lines[0])
	}
	if second.Failed || len(second.Answers) != 2 || second.Answers[0].Why != "spent" || second.Answers[0].PYes != nil {
		t.Errorf("the judgment past the budget: %s", lines[1])
	}
}

// openJSONSession opens an MCP session over --listen whose answers come as
// JSON, and returns initialize's answer, the session id and a post that
// sends one host line in it and returns the answer.
func openJSONSession(t *testing.T, l *listenProc) (opened string, sid string, post func(string) string) {
	t.Helper()
	r := l.do("POST", strings.TrimSpace(init16(1)), func(r *http.Request) { r.Header.Set("Accept", "application/json") })
	sid = r.header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	post = func(line string) string {
		return l.do("POST", strings.TrimSpace(line), func(r *http.Request) {
			session(sid)(r)
			r.Header.Set("Accept", "application/json")
		}).body
	}
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r.body, sid, post
}
