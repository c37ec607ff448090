package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hoist-mcp/hoist/internal/demo"
	"github.com/hoist-mcp/hoist/internal/testbin"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// The real implementation of the stateless era (2026-07-28) these tests
// run hoist against is the official Go SDK, v1.8.0: its client opens with
// server/discover and names the version in every request's _meta; its
// server serves that era over stdio, and over Streamable HTTP in its
// Stateless mode (its stateful HTTP handler refuses the version); both
// speak the session era too, to a peer that asks for it.

// peerEnv names the go-sdk server the test binary runs as, when set
// (TestMain): the go-sdk's own cmd_test.go pattern.
const peerEnv = "HOIST_E2E_PEER"

// runPeer runs the test binary as the go-sdk server over stdio.
func runPeer(mode string) int {
	if mode != "retail-stdio" {
		fmt.Fprintf(os.Stderr, "unknown peer %q\n", mode)
		return 2
	}
	if err := retailServer(demo.NewRetail(20)).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintf(os.Stderr, "retail peer: %v\n", err)
		return 1
	}
	return 0
}

// retailServer is hoist-mcp-demo's retail world served by the go-sdk: the
// same tools, data and answers, except that cancel_pending_order asks the
// host to confirm first, by elicitation: in the stateless era an
// input_required result, after which the host sends the call again with
// inputResponses; in the session era an elicitation/create request the
// server sends the host (the go-sdk does either, by the era its peer
// speaks).
func retailServer(world *demo.Retail) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "retail-go-sdk", Version: "1.8.0"}, nil)
	for _, raw := range world.Tools() {
		b, err := json.Marshal(raw)
		if err != nil {
			panic(err)
		}
		tool := new(mcp.Tool)
		if err := json.Unmarshal(b, tool); err != nil {
			panic(err)
		}
		name := tool.Name
		s.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args map[string]any
			json.Unmarshal(req.Params.Arguments, &args)
			if name == "cancel_pending_order" {
				resp, ok := req.Params.InputResponses["confirm"].(*mcp.ElicitResult)
				if !ok {
					return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"confirm": &mcp.ElicitParams{
						Message:         fmt.Sprintf("Cancel order %v?", args["order_id"]),
						RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"confirm": map[string]any{"type": "boolean"}}},
					}}}, nil
				}
				if resp.Action != "accept" {
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "not confirmed"}}}, nil
				}
			}
			r, _ := world.Call(ctx, name, args)
			b, err := json.Marshal(r)
			if err != nil {
				return nil, err
			}
			res := new(mcp.CallToolResult)
			if err := json.Unmarshal(b, res); err != nil {
				return nil, err
			}
			return res, nil
		})
	}
	return s
}

// newClient is the go-sdk's client; it confirms what the server asks it to.
func newClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "hoist-e2e-go-sdk", Version: "1.8.0"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
		},
	})
}

// peerCommand returns hoist-mcp with args in front of the test binary as
// the go-sdk retail server over stdio.
func peerCommand(t *testing.T, args ...string) *exec.Cmd {
	cmd := exec.Command(testbin.Build(t, "hoist-mcp"), append(args, "--", os.Args[0])...)
	cmd.Env = testbin.Env(peerEnv + "=retail-stdio")
	return cmd
}

// shopper is what one customer's session saw.
type shopper struct {
	version string // the protocol version the client ended up with
	lookups string // the item the proxy appended to find_user_id_by_email's answer
	cancel  string // cancel_pending_order's answer
}

// shop runs a customer of the retail world through cs: lists the tools,
// finds the customer by email (after which the tau2 retail flow looks up
// the customer and the first order), and cancels the second order, which
// the server has the host confirm.
func shop(t *testing.T, cs *mcp.ClientSession, n int) shopper {
	t.Helper()
	ctx := context.Background()
	var out shopper
	if res := cs.InitializeResult(); res != nil {
		out.version = res.ProtocolVersion
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "find_user_id_by_email", Arguments: map[string]any{"email": fmt.Sprintf("c%d@example.com", n)}})
	if err != nil {
		t.Fatalf("find_user_id_by_email: %v", err)
	}
	if len(res.Content) == 0 || res.Content[0].(*mcp.TextContent).Text != fmt.Sprintf("user_%d", n) {
		t.Fatalf("find_user_id_by_email answered %+v", res.Content)
	}
	if len(res.Content) == 2 {
		out.lookups = res.Content[1].(*mcp.TextContent).Text
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "cancel_pending_order", Arguments: map[string]any{"order_id": fmt.Sprintf("#W%db", n), "reason": "no longer needed"}})
	if err != nil {
		t.Fatalf("cancel_pending_order: %v", err)
	}
	if res.IsError || len(res.Content) == 0 {
		t.Fatalf("cancel_pending_order answered %+v", res)
	}
	out.cancel = res.Content[0].(*mcp.TextContent).Text
	return out
}

// checkShopper checks what a customer saw: the era asked for, the flow's
// two lookups appended to the first answer, and the order cancelled.
func checkShopper(t *testing.T, who string, got shopper, version string, n int) {
	t.Helper()
	if got.version != version {
		t.Errorf("%s: protocol version %q, want %q", who, got.version, version)
	}
	want := []string{fmt.Sprintf(`get_user_details {"user_id":"user_%d"}:`, n), fmt.Sprintf(`get_order_details {"order_id":"#W%da"}:`, n)}
	if !strings.HasPrefix(got.lookups, mcpmsg.Banner) || !strings.Contains(got.lookups, want[0]) || !strings.Contains(got.lookups, want[1]) {
		t.Errorf("%s: the flow appended %q, want its lookups %q", who, got.lookups, want)
	}
	if !strings.Contains(got.cancel, `"status": "cancelled"`) {
		t.Errorf("%s: cancel_pending_order answered %q", who, got.cancel)
	}
}

// recorded is one session as the toolkit reads it back from the store
// (hoist sessions show --json).
type recorded struct {
	Client string
	Calls  []string // "by tool", in order
}

// readSessions ingests dir into a store and returns each session's client
// and calls, by host session.
func readSessions(t *testing.T, dir string) map[string]recorded {
	t.Helper()
	hoist := testbin.Build(t, "hoist")
	cmd := exec.Command(hoist, "sessions", "--sessions", dir, "--json")
	cmd.Env = testbin.Env()
	var list []struct {
		ID          string `json:"id"`
		HostSession string `json:"host_session"`
	}
	if err := json.Unmarshal(run(t, "hoist sessions", cmd), &list); err != nil {
		t.Fatalf("hoist sessions --json: %v", err)
	}
	out := map[string]recorded{}
	for _, s := range list {
		cmd := exec.Command(hoist, "sessions", "show", s.ID, "--sessions", dir, "--json")
		cmd.Env = testbin.Env()
		var show struct {
			ClientName string `json:"client_name"`
			Events     []struct {
				Type  string `json:"type"`
				Tool  string `json:"tool_name"`
				Actor string `json:"actor"`
			} `json:"events"`
		}
		body := run(t, "hoist sessions show", cmd)
		if err := json.Unmarshal(body, &show); err != nil {
			t.Fatalf("hoist sessions show --json: %v\n%s", err, body)
		}
		r := recorded{Client: show.ClientName}
		for _, ev := range show.Events {
			if ev.Type == "call" {
				r.Calls = append(r.Calls, ev.Actor+" "+ev.Tool)
			}
		}
		out[s.HostSession] = r
	}
	return out
}

// wantCalls are a customer's calls as recorded: the agent's two, the
// flow's two lookups between them, and the cancellation once, though the
// stateless era sends it twice (the second time with the confirmation).
var wantCalls = []string{"agent find_user_id_by_email", "proxy get_user_details", "proxy get_order_details", "agent cancel_pending_order"}

func checkRecorded(t *testing.T, who string, got recorded, ok bool) {
	t.Helper()
	if !ok {
		t.Errorf("%s: no session recorded", who)
		return
	}
	if got.Client != "hoist-e2e-go-sdk" || strings.Join(got.Calls, ", ") != strings.Join(wantCalls, ", ") {
		t.Errorf("%s: recorded client %q, calls %q; want hoist-e2e-go-sdk and %q", who, got.Client, got.Calls, wantCalls)
	}
}

// flowArgs serve the flow learned from τ²-bench's retail trajectories.
func flowArgs(dir string) []string {
	return []string{"--record", dir, "--domain", "retail", "--flow", filepath.Join(testbin.Root(), "testdata", "flows", "tau2-retail.flow.json")}
}

// TestModernStdio: the go-sdk client and server of the stateless era over
// stdio, through hoist-mcp serving a flow: the client stays in that era, the
// flow's lookups are appended to a valid result, the confirmation the
// server asks for goes through, and the store reads one call where the
// host sent the cancellation twice.
func TestModernStdio(t *testing.T) {
	dir := t.TempDir()
	cmd := peerCommand(t, flowArgs(dir)...)
	cmd.Env = append(cmd.Env, "HOIST_SESSION=stdio")
	shopOverStdio(t, "stdio", cmd, dir)
}

// shopOverStdio runs customer 7 with the go-sdk client of the stateless
// era over stdio to cmd, a hoist-mcp recording into dir as host session
// who, and checks what the customer saw and what was recorded.
func shopOverStdio(t *testing.T, who string, cmd *exec.Cmd, dir string) {
	t.Helper()
	cs, err := newClient().Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("%s: connecting through hoist-mcp: %v", who, err)
	}
	got := shop(t, cs, 7)
	if err := cs.Close(); err != nil {
		t.Errorf("%s: closing: %v", who, err)
	}
	checkShopper(t, who, got, mcpmsg.ProtocolModern, 7)
	s, ok := readSessions(t, dir)[who]
	checkRecorded(t, who, s, ok)
}

// listenProc is hoist-mcp --listen under test.
type listenProc struct {
	cmd    *exec.Cmd
	url    string
	stderr *strings.Builder
}

func startListen(t *testing.T, cmd *exec.Cmd) *listenProc {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	l := &listenProc{cmd: cmd, stderr: &strings.Builder{}}
	cmd.Stderr = &lockedWriter{w: l.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("hoist-mcp --listen printed no URL: %v", err)
	}
	l.url = strings.TrimSpace(line)
	return l
}

func (l *listenProc) stop(t *testing.T) {
	t.Helper()
	l.cmd.Process.Signal(syscall.SIGTERM)
	if err := l.cmd.Wait(); err != nil {
		t.Errorf("hoist-mcp --listen after SIGTERM: %v\n%s", err, l.stderr)
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// withHeader is an HTTP client that sends header name: value with each
// request.
func withHeader(name, value string) *http.Client {
	return &http.Client{Transport: headerTransport{name, value}}
}

type headerTransport struct{ name, value string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return http.DefaultTransport.RoundTrip(r)
}

// TestModernListen serves two hosts at once over one hoist-mcp --listen in
// front of the go-sdk server over stdio: the go-sdk client of the stateless
// era (its hoist session named by Hoist-Session) and the same client asking
// for the session era (2025-11-25). Each is recorded on its own, with the
// flow served to each.
func TestModernListen(t *testing.T) {
	dir := t.TempDir()
	l := startListen(t, peerCommand(t, append([]string{"--listen", "127.0.0.1:0"}, flowArgs(dir)...)...))
	var wg sync.WaitGroup
	got := map[string]shopper{}
	var mu sync.Mutex
	for _, tc := range []struct {
		host    string
		version string
		n       int
	}{{"modern", mcpmsg.ProtocolModern, 7}, {"legacy", mcpmsg.ProtocolLegacyLatest, 8}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr := &mcp.StreamableClientTransport{Endpoint: l.url, HTTPClient: withHeader("Hoist-Session", tc.host)}
			var opts *mcp.ClientSessionOptions
			if tc.version != mcpmsg.ProtocolModern {
				opts = &mcp.ClientSessionOptions{ProtocolVersion: tc.version}
			}
			cs, err := newClient().Connect(context.Background(), tr, opts)
			if err != nil {
				t.Errorf("%s: connecting to hoist-mcp --listen: %v", tc.host, err)
				return
			}
			s := shop(t, cs, tc.n)
			cs.Close()
			mu.Lock()
			got[tc.host] = s
			mu.Unlock()
		}()
	}
	wg.Wait()
	l.stop(t)
	checkShopper(t, "modern", got["modern"], mcpmsg.ProtocolModern, 7)
	checkShopper(t, "legacy", got["legacy"], mcpmsg.ProtocolLegacyLatest, 8)
	sessions := readSessions(t, dir)
	s, ok := sessions["modern"]
	checkRecorded(t, "modern", s, ok)
	s, ok = sessions["legacy"]
	checkRecorded(t, "legacy", s, ok)
}

// TestModernUpstream proxies the go-sdk client of the stateless era over
// stdio to the go-sdk server over Streamable HTTP (its Stateless mode),
// through hoist-mcp --upstream serving the flow.
func TestModernUpstream(t *testing.T) {
	world := demo.NewRetail(20)
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return retailServer(world) }, &mcp.StreamableHTTPOptions{Stateless: true})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler}
	go srv.Serve(ln)
	defer srv.Close()

	dir := t.TempDir()
	cmd := exec.Command(testbin.Build(t, "hoist-mcp"), append(flowArgs(dir), "--upstream", "http://"+ln.Addr().String()+"/mcp")...)
	cmd.Env = testbin.Env("HOIST_SESSION=upstream")
	shopOverStdio(t, "upstream", cmd, dir)
}
