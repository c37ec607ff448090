package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/internal/testbin"
)

func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

// retailSession is the wire of one retail session: requests in, and for
// each id the text and isError its answer must have.
var retailSession = []struct {
	request string
	text    string // a substring of the answer's text
	isError bool
}{
	{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"find_user_id_by_email","arguments":{"email":"c12@example.com"}}}`, `user_12`, false},
	{`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_user_details","arguments":{"user_id":"user_12"}}}`, `"orders": ["#W12a", "#W12b"]`, false},
	{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"get_order_details","arguments":{"order_id":"#W12a"}}}`, `"status": "pending"`, false},
	{`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"cancel_pending_order","arguments":{"order_id":"#W12a","reason":"ordered by mistake"}}}`, `"status": "cancelled"`, false},
	{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_order_details","arguments":{"order_id":"#W12a"}}}`, `"cancel_reason": "ordered by mistake"`, false},
	{`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"get_order_details","arguments":{"order_id":"#W12b"}}}`, `"status": "pending"`, false},
	{`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"find_user_id_by_email","arguments":{"email":"c99@example.com"}}}`, `Error: User not found`, true},
	{`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"get_order_details","arguments":{"order_id":"W12a"}}}`, `Error: Order not found`, true},
	{`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"cancel_pending_order","arguments":{"order_id":"#W12a","reason":"ordered by mistake"}}}`, `Error: Non-pending order cannot be cancelled`, true},
}

const (
	initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}`
	toolsList  = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
)

type answer struct {
	ID     int             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

// checkTools checks a tools/list result: the five tools, in order, with
// their readOnlyHint.
func checkTools(t *testing.T, raw json.RawMessage) {
	t.Helper()
	var r struct {
		Tools []struct {
			Name        string         `json:"name"`
			InputSchema map[string]any `json:"inputSchema"`
			Annotations struct {
				ReadOnlyHint *bool `json:"readOnlyHint"`
			} `json:"annotations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tool := range r.Tools {
		ro := "no hint"
		if tool.Annotations.ReadOnlyHint != nil {
			ro = map[bool]string{true: "read-only", false: "writes"}[*tool.Annotations.ReadOnlyHint]
		}
		got = append(got, tool.Name+" "+ro)
		if tool.InputSchema["type"] != "object" {
			t.Errorf("%s: input schema %v", tool.Name, tool.InputSchema)
		}
	}
	want := []string{"find_user_id_by_email read-only", "get_user_details read-only", "get_order_details read-only", "cancel_pending_order writes", "modify_pending_order_payment writes"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

func checkAnswer(t *testing.T, a answer) {
	t.Helper()
	want := retailSession[a.ID-3]
	var r toolResult
	if err := json.Unmarshal(a.Result, &r); err != nil || len(r.Content) != 1 || r.Content[0].Type != "text" {
		t.Fatalf("id %d: answer %s", a.ID, a.Result)
	}
	if !strings.Contains(r.Content[0].Text, want.text) || r.IsError != want.isError {
		t.Errorf("id %d: got %q (isError %v), want it to hold %q (isError %v)", a.ID, r.Content[0].Text, r.IsError, want.text, want.isError)
	}
}

// TestRetailStdio sends a session one request at a time, so that the
// cancel is seen by the reads after it.
func TestRetailStdio(t *testing.T) {
	cmd := exec.Command(testbin.Build(t, "hoist-mcp-demo"), "--world", "retail")
	cmd.Env = testbin.Env()
	in, _ := cmd.StdinPipe()
	outPipe, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(outPipe)
	roundTrip := func(req string) answer {
		t.Helper()
		io.WriteString(in, req+"\n")
		line, err := out.ReadBytes('\n')
		if err != nil {
			t.Fatalf("no answer to %s: %v", req, err)
		}
		var a answer
		if err := json.Unmarshal(line, &a); err != nil || a.Error != nil {
			t.Fatalf("answer %s", line)
		}
		return a
	}
	hello := roundTrip(initialize)
	if !bytes.Contains(hello.Result, []byte(`"name":"hoist-mcp-demo"`)) || !bytes.Contains(hello.Result, []byte("c1@example.com to c20@example.com")) {
		t.Errorf("initialize: %s", hello.Result)
	}
	io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	checkTools(t, roundTrip(toolsList).Result)
	for _, s := range retailSession {
		checkAnswer(t, roundTrip(s.request))
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("hoist-mcp-demo exited: %v", err)
	}
}

// TestRetailState checks that the shop's state lives as long as its
// process: a new process serves every order pending again.
func TestRetailState(t *testing.T) {
	for range 2 {
		cmd := exec.Command(testbin.Build(t, "hoist-mcp-demo"), "--world", "retail")
		cmd.Env = testbin.Env()
		cmd.Stdin = strings.NewReader(retailSession[3].request + "\n")
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(out, []byte(`\"status\": \"cancelled\"`)) {
			t.Errorf("the cancel in a new process: %s", out)
		}
	}
}

func TestWorldFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--world"}, "hoist-mcp-demo: flag needs an argument: --world\n"},
		{[]string{"--world", "shop"}, `hoist-mcp-demo: --world "shop": want echo, retail or tau2-retail` + "\n"},
	} {
		cmd := exec.Command(testbin.Build(t, "hoist-mcp-demo"), tc.args...)
		cmd.Env = testbin.Env()
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !bytes.HasPrefix(out, []byte(tc.want)) {
			t.Errorf("%q: %v %s", tc.args, err, out)
		}
	}
	// The echo world is still the default.
	cmd := exec.Command(testbin.Build(t, "hoist-mcp-demo"))
	cmd.Env = testbin.Env()
	cmd.Stdin = strings.NewReader(toolsList + "\n")
	out, err := cmd.Output()
	if err != nil || !bytes.Contains(out, []byte(`"name":"lookup"`)) || bytes.Contains(out, []byte("get_user_details")) {
		t.Errorf("default world: %v %s", err, out)
	}
}

// TestRetailHTTP runs the session over Streamable HTTP.
func TestRetailHTTP(t *testing.T) {
	cmd := exec.Command(testbin.Build(t, "hoist-mcp-demo"), "--world", "retail", "--http", "127.0.0.1:0")
	cmd.Env = testbin.Env()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("no URL: %v", err)
	}
	url := strings.TrimSpace(line)
	var session string
	post := func(body string) answer {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			session = id
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusAccepted {
			return answer{}
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s %s", body, resp.Status, b)
		}
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			var data []byte
			for _, l := range strings.Split(string(b), "\n") {
				if d, ok := strings.CutPrefix(l, "data: "); ok {
					data = []byte(d) // the last event is the answer
				}
			}
			b = data
		}
		var a answer
		if err := json.Unmarshal(b, &a); err != nil || a.Error != nil {
			t.Fatalf("%s: answer %s", body, b)
		}
		return a
	}
	post(initialize)
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	checkTools(t, post(toolsList).Result)
	for _, s := range retailSession {
		checkAnswer(t, post(s.request))
	}
}
