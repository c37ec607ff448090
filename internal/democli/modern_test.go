package democli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hoist-mcp/hoist/internal/testbin"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// TestModernThroughListen: a host of the stateless era (the go-sdk client,
// which opens with server/discover and names 2026-07-28 in every request)
// tries the demo through hoist-mcp --listen, and so does a host of the
// session era, each getting the version it asked for; the shop answers
// both.
func TestModernThroughListen(t *testing.T) {
	var stderr strings.Builder
	url := startURL(t, &stderr, testbin.Build(t, "hoist-mcp"), "--listen", "127.0.0.1:0", "--", testbin.Build(t, "hoist-mcp-demo"), "--world", "retail")
	for _, version := range []string{mcpmsg.ProtocolModern, mcpmsg.ProtocolLegacyLatest} {
		t.Run(version, func(t *testing.T) {
			ctx := context.Background()
			client := mcp.NewClient(&mcp.Implementation{Name: "demo-test", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatalf("connecting: %v (proxy stderr: %s)", err, stderr.String())
			}
			defer cs.Close()
			res := cs.InitializeResult()
			if res == nil || res.ProtocolVersion != version || res.ServerInfo == nil || res.ServerInfo.Name != "hoist-mcp-demo" {
				t.Fatalf("connected with %+v, want version %s and serverInfo hoist-mcp-demo", res, version)
			}
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) != 5 {
				t.Fatalf("tools/list: %v, %+v", err, tools)
			}
			call, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "find_user_id_by_email", Arguments: map[string]any{"email": "c7@example.com"}})
			if err != nil || call.IsError || len(call.Content) != 1 {
				t.Fatalf("tools/call: %v, %+v", err, call)
			}
			if text := call.Content[0].(*mcp.TextContent).Text; text != "user_7" {
				b, _ := json.Marshal(call)
				t.Errorf("find_user_id_by_email answered %s", b)
			}
		})
	}
}

// TestModernUpstream: the demo's own Streamable HTTP serves the stateless
// era too, with no session: a 2026-07-28 host over stdio reaches it through
// hoist-mcp --upstream.
func TestModernUpstream(t *testing.T) {
	url := startURL(t, nil, testbin.Build(t, "hoist-mcp-demo"), "--world", "retail", "--http", "127.0.0.1:0")
	proxy := exec.Command(testbin.Build(t, "hoist-mcp"), "--upstream", url)
	proxy.Env = testbin.Env()
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "demo-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: proxy}, &mcp.ClientSessionOptions{ProtocolVersion: mcpmsg.ProtocolModern})
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	defer cs.Close()
	if res := cs.InitializeResult(); res == nil || res.ProtocolVersion != mcpmsg.ProtocolModern {
		t.Fatalf("connected with %+v, want %s", res, mcpmsg.ProtocolModern)
	}
	call, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "find_user_id_by_email", Arguments: map[string]any{"email": "c3@example.com"}})
	if err != nil || len(call.Content) != 1 || call.Content[0].(*mcp.TextContent).Text != "user_3" {
		t.Fatalf("tools/call: %v, %+v", err, call)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool"}); err == nil {
		t.Error("an unknown tool answered without an error")
	}
}

// startURL starts a program that serves HTTP and prints its URL on stdout
// (hoist-mcp --listen, hoist-mcp-demo --http), stderr going to stderr when
// not nil, and returns the URL; the program is stopped with SIGTERM when the
// test ends.
func startURL(t *testing.T, stderr io.Writer, args ...string) string {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = testbin.Env()
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("%s printed no URL: %v", filepath.Base(args[0]), err)
	}
	return strings.TrimSpace(line)
}
