package proxy_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/internal/oracletest"
	"github.com/hoist-mcp/hoist/internal/testbin"
)

// Issue 23, point 4: nothing waits on the model but what must. A held
// write waits for its own verdict; every other line keeps flowing both
// ways. The fake model answers only once the test has seen the other
// answers, so the test asserts the order, never a time.

// answerID returns a JSON-RPC answer's id.
func answerID(t *testing.T, line string) string {
	t.Helper()
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("not a JSON-RPC line: %v: %s", err, line)
	}
	return string(m.ID)
}

// TestJudgeHoldsOnlyItsWrite: while the confirmation judge waits for the
// model about a cancel, a ping and an unrelated get_user_details sent after
// it are answered; the cancel is answered once the model is.
func TestJudgeHoldsOnlyItsWrite(t *testing.T) {
	srv := oracletest.Start(t)
	tmp := t.TempDir()
	ctxFile, cache := filepath.Join(tmp, "chat.jsonl"), filepath.Join(tmp, "cache")
	p, journal, _, _ := openShop(t, []string{"TYPESAFE_API_KEY=" + judgeKey}, judgeArgs(srv, ctxFile, cache, "enforce")...)
	do := func(line string) string { p.send(line); return p.readLine() }
	chat(t, ctxFile, "user", "Hi, I'm c7@example.com. Please cancel my order #W7a, I no longer need it.")
	do(toolCall(3, "find_user_id_by_email", `{"email":"c7@example.com"}`))
	do(toolCall(4, "get_order_details", `{"order_id":"#W7a"}`))
	chat(t, ctxFile, "assistant", "I will cancel order #W7a for the reason 'no longer needed'. Shall I go ahead?")
	chat(t, ctxFile, "user", "Hmm, hold on, let me think.")

	release := make(chan struct{})
	r := oracletest.WithLogprobs(0.15)
	r.Wait = release
	srv.Push(r)
	p.send(toolCall(5, "cancel_pending_order", `{"order_id":"#W7a","reason":"no longer needed"}`))
	<-srv.Hung() // the judge is asking
	p.send(`{"jsonrpc":"2.0","id":6,"method":"ping"}`+"\n", toolCall(7, "get_user_details", `{"user_id":"user_7"}`))
	got := map[string]string{}
	for range 2 {
		l := p.readLine()
		got[answerID(t, l)] = l
	}
	close(release)
	if _, ok := got["6"]; !ok {
		t.Errorf("the ping was not answered while the judge waited for the model: %v", got)
	}
	if l, ok := got["7"]; !ok || !strings.Contains(l, "user_7") {
		t.Errorf("get_user_details was not answered while the judge waited for the model: %v", got)
	}
	cancel := p.readLine()
	if id := answerID(t, cancel); id != "5" {
		t.Fatalf("after the model answered, got %s", cancel)
	}
	if r := readResult(t, cancel); !r.Result.IsError || r.text() != judgeRefusal {
		t.Errorf("the cancel the model said no to got %s", cancel)
	}
	if _, code := p.finish(); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr)
	}
	for _, c := range servedCalls(t, journal) {
		if strings.HasPrefix(c, "cancel_pending_order") {
			t.Errorf("the refused cancel reached the shop: %s", c)
		}
	}
}

// oracleServed starts hoist-mcp serving a flow whose arbiter weighs the
// System-One model's answer, in front of the demo, the model being srv.
func oracleServed(t *testing.T, srv *oracletest.Server) (*proc, string) {
	t.Helper()
	dir, cache := t.TempDir(), filepath.Join(t.TempDir(), "cache")
	p := startProxy(t, []string{"TYPESAFE_API_KEY=" + judgeKey}, "--record", dir, "--flow", "testdata/oracle.flow.json",
		"--oracle-url", srv.URL, "--oracle-model", "jev-test", "--oracle-cache", cache, "--", testbin.Build(t, "hoist-mcp-demo"))
	p.send(tryIt[0]+"\n", tryIt[1]+"\n", tryIt[2]+"\n")
	p.readLine()
	p.readLine()
	return p, dir
}

// TestFlowOracleHoldsOnlyItsAnswer: while the flow asks the model about a
// lookup after one call, the answer to that call waits, and a ping and
// another call sent after it are answered; the held answer comes back
// with the lookup once the model has answered.
func TestFlowOracleHoldsOnlyItsAnswer(t *testing.T) {
	srv := oracletest.Start(t)
	release := make(chan struct{})
	r := oracletest.WithLogprobs(0.95)
	r.Wait = release
	srv.Push(r)
	p, dir := oracleServed(t, srv)
	p.send(call(3, `{"text":"a","next":"b"}`))
	<-srv.Hung() // the flow is asking
	p.send(`{"jsonrpc":"2.0","id":4,"method":"ping"}`+"\n", call(5, `{"text":"c"}`))
	got := map[string]bool{}
	for range 2 {
		got[answerID(t, p.readLine())] = true
	}
	close(release)
	if !got["4"] || !got["5"] {
		t.Errorf("answered while the flow's question waited for the model: %v, want the ping (4) and the call (5)", got)
	}
	held := p.readLine()
	if id := answerID(t, held); id != "3" {
		t.Fatalf("after the model answered, got %s", held)
	}
	if item := lookedUp(t, held); !strings.HasSuffix(item, "lookup {\"text\":\"b\"}:\n{\"text\":\"b\"}") {
		t.Errorf("the held answer came back with %q", item)
	}
	if _, code := p.finish(); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr)
	}
	// The decision had the model's answer, given after the other answers
	// came: the question was still waiting for it then.
	decisions, _ := flowLog(t, dir)
	if len(decisions) == 0 || len(decisions[0].Offers) != 1 || decisions[0].Offers[0].POracle == nil || *decisions[0].Offers[0].POracle != 0.95 {
		t.Errorf("the first decision did not have the model's answer: %+v", decisions)
	}
}

// TestFlowCloseAnswersAll (issue 23, point 5): a host that sends five reads
// and a ping and closes stdin while the flow asks the model about the
// first read's lookup gets all six answers and the first, unextended;
// every line is logged; no lookup is sent once the host has closed, and
// the model is not waited for.
func TestFlowCloseAnswersAll(t *testing.T) {
	srv := oracletest.Start(t)
	never := make(chan struct{}) // the model never answers
	r := oracletest.WithLogprobs(0.95)
	r.Wait = never
	srv.Push(r)
	p, dir := oracleServed(t, srv)
	p.send(call(3, `{"text":"a","next":"b"}`))
	<-srv.Hung()
	for i := 4; i <= 8; i++ {
		p.send(call(i, `{"text":"r`+itoa(i)+`"}`))
	}
	p.send(`{"jsonrpc":"2.0","id":9,"method":"ping"}` + "\n")
	rest, code := p.finish()
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr)
	}
	answered := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(rest), "\n") {
		answered[answerID(t, l)] = true
		if answerID(t, l) == "3" && lookedUp(t, l) != "" {
			t.Errorf("the held answer was extended after the host closed: %s", l)
		}
	}
	for i := 3; i <= 9; i++ {
		if !answered[itoa(i)] {
			t.Errorf("request %d was not answered before exit; got %v", i, answered)
		}
	}
	_, lines, _ := readLog(t, dir)
	logged := map[string]int{}
	for _, l := range lines {
		if l.Message == nil {
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal(l.Message, &m)
		if l.From == "proxy" && m.Method == "tools/call" {
			t.Errorf("a lookup was sent after the host closed: %s", l.Message)
		}
		logged[l.From+" "+string(m.ID)]++
	}
	for i := 3; i <= 9; i++ {
		if logged["client "+itoa(i)] != 1 || logged["server "+itoa(i)] != 1 {
			t.Errorf("request %d: logged %d time(s) from the host, its answer %d time(s)", i, logged["client "+itoa(i)], logged["server "+itoa(i)])
		}
	}
}

// TestShadowHostCloses: a shadow flow decides after the last call even
// when the host closes stdin at once: it looks nothing up, so the host's
// leaving ends nothing of it, and the flow log is whole.
func TestShadowHostCloses(t *testing.T) {
	p, dir := served(t, nil, "--flow-shadow")
	p.send(call(3, `{"text":"a","next":"b"}`))
	rest, code := p.finish()
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr)
	}
	if answerID(t, strings.TrimSpace(rest)) != "3" {
		t.Errorf("the call's answer: %q", rest)
	}
	decisions, runs := flowLog(t, dir)
	if len(decisions) == 0 || len(runs) != 1 || !decisions[0].Shadow {
		t.Errorf("the shadow run after the last call was not logged: %d decisions, %d runs", len(decisions), len(runs))
	}
}
