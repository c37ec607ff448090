package episode

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hoist-mcp/hoist/internal/testbin"
	"github.com/hoist-mcp/hoist/mcplog"
)

func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

// proxied is one hoist-mcp recording in front of hoist-mcp-demo, driven
// over its stdin and stdout as a host would.
type proxied struct {
	t    *testing.T
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	next int
}

func startProxy(t *testing.T, dir, serverName string) *proxied {
	t.Helper()
	cmd := exec.Command(testbin.Build(t, "hoist-mcp"), "--record", dir, "--server-name", serverName, "--domain", "support",
		"--", testbin.Build(t, "hoist-mcp-demo"))
	cmd.Env = append(os.Environ(), "HOIST_SESSION=hs-e2e")
	cmd.Stderr = io.Discard
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proxied{t: t, cmd: cmd, in: in, out: bufio.NewReader(out), next: 1}
	t.Cleanup(func() { p.close() })
	p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"0"}}}`)
	p.read()
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	p.send(`{"jsonrpc":"2.0","id":"list","method":"tools/list"}`)
	p.read()
	return p
}

func (p *proxied) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

// call sends a tools/call without waiting for its answer.
func (p *proxied) call(tool, args string) {
	p.t.Helper()
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, p.next, tool, args))
	p.next++
}

func (p *proxied) read() string {
	p.t.Helper()
	line, err := p.out.ReadString('\n')
	if err != nil {
		p.t.Fatalf("reading the proxy's answer: %v", err)
	}
	return line
}

func (p *proxied) close() {
	if p.in != nil {
		p.in.Close()
		p.in = nil
		io.Copy(io.Discard, p.out)
		p.cmd.Wait()
	}
}

// TestTwoServersOneHostSession records one host session of two servers
// with two real proxies in front of hoist-mcp-demo (a shared
// HOIST_SESSION), then merges their logs into one Episode: tools named
// server::tool, calls in the order the proxies read them, and LLM turns
// inferred across the servers (manual, "Several servers").
func TestTwoServersOneHostSession(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the proxy")
	}
	dir := t.TempDir()
	tickets := startProxy(t, dir, "tickets")
	docs := startProxy(t, dir, "docs")

	// Turn 0: a ticket, then at once a docs search (the 500 ms rule).
	tickets.call("lookup", `{"text":"ticket-42"}`)
	tickets.read()
	docs.call("lookup", `{"text":"refunds"}`)
	docs.read()
	time.Sleep(800 * time.Millisecond)
	// Turn 1: a slow write on one server, a search on the other while it
	// is pending (parallel calls).
	tickets.call("update", `{"text":"close 42","delay_ms":400}`)
	time.Sleep(50 * time.Millisecond)
	docs.call("lookup", `{"text":"closing"}`)
	docs.read()
	tickets.read()
	time.Sleep(800 * time.Millisecond)
	// Turn 2: a failing call.
	docs.call("update", `{"text":"x","fail":true}`)
	docs.read()
	tickets.close()
	docs.close()

	paths, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(paths) != 2 {
		t.Fatalf("%d logs in %s, want 2", len(paths), dir)
	}
	var logs []*mcplog.Log
	for _, p := range paths {
		l, err := mcplog.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, l)
	}
	groups := HostSessions(logs)
	if len(groups) != 1 || len(groups[0]) != 2 {
		t.Fatalf("HostSessions made %d groups, want one of both logs", len(groups))
	}
	ep, err := FromLogs(groups[0], Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ep.HostSession != "hs-e2e" || ep.Domain != "support" || ep.AgentModel != "" || ep.ClientName != "e2e" {
		t.Errorf("host session %q, domain %q, agent model %q, client %q", ep.HostSession, ep.Domain, ep.AgentModel, ep.ClientName)
	}
	kinds := map[string]Kind{}
	for _, tl := range ep.Tools {
		kinds[tl.Name] = tl.Kind
	}
	wantKinds := map[string]Kind{"tickets::lookup": Read, "tickets::update": Write, "docs::lookup": Read, "docs::update": Write}
	if diff := cmp.Diff(wantKinds, kinds); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	type row struct {
		Tool    string
		Text    string
		Turn    int
		IsError bool
	}
	var got []row
	for _, c := range ep.Calls() {
		var args struct {
			Text string `json:"text"`
		}
		json.Unmarshal(c.Args, &args)
		if c.Result == nil {
			t.Fatalf("call %d (%s) has no result", c.Index, c.Tool)
		}
		got = append(got, row{c.Tool, args.Text, c.Turn, c.Result.IsError})
	}
	want := []row{
		{"tickets::lookup", "ticket-42", 0, false},
		{"docs::lookup", "refunds", 0, false},
		{"tickets::update", "close 42", 1, false},
		{"docs::lookup", "closing", 1, false},
		{"docs::update", "x", 2, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}
