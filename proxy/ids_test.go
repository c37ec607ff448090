package proxy_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/internal/testbin"
)

// Issue 23, point 3: whatever ids the host uses, each host request gets
// its own server answer and each of the proxy's requests its own. The host
// uses the proxy's own ids (hoist-1, hoist-commit-1), escaped or not, and
// numbers, while the proxy's requests of those ids are in flight; the echo
// demo answers each lookup with its arguments (delay_ms keeps one in
// flight), so every answer says whose it is.

// lookupID is a host's call of the echo demo's lookup with a raw id.
func lookupID(id, text string, delayMS int) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"lookup","arguments":{"text":"` + text + `","delay_ms":` + itoa(delayMS) + `}}}` + "\n"
}

// answersByID reads the host's lines: each answer's first text, by raw id.
func answersByID(t *testing.T, lines []string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		var r struct {
			ID     json.RawMessage `json:"id"`
			Result struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("host line %q: %v", l, err)
		}
		text := ""
		for _, c := range r.Result.Content {
			text += c.Text
		}
		out[string(r.ID)] = append(out[string(r.ID)], text)
	}
	return out
}

// checkOwn says whether the host got exactly one answer to id, and it says
// text.
func checkOwn(t *testing.T, got map[string][]string, id, text string) {
	t.Helper()
	if a := got[id]; len(a) != 1 || !strings.Contains(a[0], `"text":"`+text+`"`) {
		t.Errorf("the host's request %s got %q, want one answer with its own text %q", id, a, text)
	}
}

func TestIDsCommitCollide(t *testing.T) {
	demo := testbin.Build(t, "hoist-mcp-demo")
	p := startProxy(t, nil, "--commit", "--", demo)
	p.send(tryIt[0]+"\n", tryIt[1]+"\n", tryIt[2]+"\n")
	p.readLine()
	p.readLine()
	// The commit's call is hoist-commit-1, slow; the host then sends a
	// request of that id, which the server answers at once.
	p.send(commitCall(7, inner("lookup", `{"text":"c7","delay_ms":300}`)))
	p.send(lookupID(`"hoist-commit-1"`, "h1", 0))
	// The host's requests of ids the proxy will use next, in flight.
	p.send(lookupID(`"hoist-commit-2"`, "h2", 300), lookupID(`"hoist\u002dcommit-3"`, "h3", 300), lookupID(`1`, "h4", 0))
	p.send(commitCall(8, inner("lookup", `{"text":"c8"}`)))
	// Closing stdin ends the session; read until the last commit's answer.
	lines := p.readThrough(`"id":8,`)
	rest, code := p.finish()
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr)
	}
	got := answersByID(t, append(lines, strings.Split(rest, "\n")...))
	checkOwn(t, got, `"hoist-commit-1"`, "h1")
	checkOwn(t, got, `"hoist-commit-2"`, "h2")
	checkOwn(t, got, `"hoist\u002dcommit-3"`, "h3")
	checkOwn(t, got, `1`, "h4")
	for id, text := range map[string]string{"7": "c7", "8": "c8"} {
		if a := got[id]; len(a) != 1 || !strings.Contains(a[0], `"text":"`+text+`"`) {
			t.Errorf("hoist_commit %s answered %q, want its own call's result %q", id, a, text)
		}
	}
}

func TestIDsFlowCollide(t *testing.T) {
	p, dir := served(t, nil)
	// A host request of the id the flow's first lookup would take, in
	// flight while the flow looks up after call 3.
	p.send(lookupID(`"hoist-1"`, "h1", 300))
	p.send(call(3, `{"text":"a","next":"b"}`))
	lines := p.readThrough(`"id":3,`)
	rest, code := p.finish()
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr)
	}
	got := answersByID(t, append(lines, strings.Split(rest, "\n")...))
	checkOwn(t, got, `"hoist-1"`, "h1")
	if a := got["3"]; len(a) != 1 || !strings.Contains(a[0], "lookup {\"text\":\"b\"}:\n{\"text\":\"b\"}") {
		t.Errorf("call 3 got %q, want its answer with the lookup's own result", a)
	}

	// The episode of the log tells the host's hoist-1 from the proxy's
	// lookup, each with its own result.
	logs, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	var log string
	for _, l := range logs {
		if !strings.HasSuffix(l, ".flow.jsonl") {
			log = l
		}
	}
	ep, err := episode.ReadLog(log, episode.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, c := range ep.Calls() {
		text := ""
		if c.Result != nil {
			text = c.Result.Text
		}
		calls = append(calls, fmt.Sprintf("%s %s %s %s", c.ID, c.By, c.Args, text))
	}
	want := []string{
		`"hoist-1" agent {"text":"h1","delay_ms":300} {"delay_ms":300,"text":"h1"}`,
		`3 agent {"text":"a","next":"b"} {"next":"b","text":"a"}`,
		`"hoist-2" proxy {"text":"b"} {"text":"b"}`,
	}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("the episode's calls (-want +got):\n%s", diff)
	}
}

func TestIDsFlowCollideListen(t *testing.T) {
	l := startListen(t, "--flow", demoFlow, "--commit", "--", testbin.Build(t, "hoist-mcp-demo"))
	sid := l.initialize(nil)
	post := func(line string) string {
		return l.do("POST", strings.TrimSpace(line), func(r *http.Request) {
			session(sid)(r)
			r.Header.Set("Accept", "application/json")
		}).body
	}
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	var wg sync.WaitGroup
	answers := make([]string, 4)
	for i, line := range []string{
		lookupID(`"hoist-1"`, "h1", 300),
		lookupID(`"hoist-commit-1"`, "h2", 300),
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = post(line)
		}()
	}
	// Both are in flight once the server has them; the flow's lookup and
	// the commit's call that follow must not take their ids.
	answers[2] = post(call(3, `{"text":"a","next":"b"}`))
	answers[3] = post(commitCall(9, inner("lookup", `{"text":"c9"}`)))
	wg.Wait()
	got := answersByID(t, answers)
	checkOwn(t, got, `"hoist-1"`, "h1")
	checkOwn(t, got, `"hoist-commit-1"`, "h2")
	if a := got["3"]; len(a) != 1 || !strings.Contains(a[0], "lookup {\"text\":\"b\"}:\n{\"text\":\"b\"}") {
		t.Errorf("call 3 got %q, want its answer with the lookup's own result", a)
	}
	if a := got["9"]; len(a) != 1 || !strings.Contains(a[0], `"text":"c9"`) {
		t.Errorf("hoist_commit 9 answered %q, want its own call's result", a)
	}
	l.do("DELETE", "", session(sid))
	l.cmd.Process.Signal(syscall.SIGTERM)
	l.wait()
}

// readThrough reads the host's lines up to the first that contains want,
// and returns them all.
func (p *proc) readThrough(want string) []string {
	var lines []string
	for {
		l := p.readLine()
		lines = append(lines, l)
		if strings.Contains(l, want) || l == "" {
			return lines
		}
	}
}
