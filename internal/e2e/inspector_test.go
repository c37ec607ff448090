package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/internal/testbin"
)

// inspect runs `mcp-inspector-cli --cli ARGV... --method tools/list` and
// returns the JSON it prints.
//
// The CLI reads its own package.json as "../package.json" when that exists
// relative to the current directory, else "../../package.json" (both relative
// to its module): it must run in a directory whose parent has a
// package.json (docs/peers.md). A scratch pair of directories gives it one
// without writing into the peers' folder.
func inspect(t *testing.T, nodeModules string, argv ...string) any {
	t.Helper()
	parent := t.TempDir()
	if err := os.WriteFile(filepath.Join(parent, "package.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "cwd")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// -e sets the server's environment: GORACE keeps a race-enabled
	// hoist-mcp from sleeping a second at exit (testbin.Env).
	args := append(append([]string{"--cli", "-e", "GORACE=atexit_sleep_ms=0 halt_on_error=1"}, argv...), "--method", "tools/list")
	cmd := exec.Command(peerBin(t, nodeModules, "mcp-inspector-cli"), args...)
	cmd.Dir = dir
	out := run(t, "mcp-inspector-cli", cmd)
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("decoding what mcp-inspector-cli printed: %v\n%s", err, out)
	}
	return v
}

// TestInspectorListsToolsThroughProxy lists server-everything's tools with
// the inspector CLI directly and through hoist-mcp --record: the lists must
// be equal, and the log must hold the session.
func TestInspectorListsToolsThroughProxy(t *testing.T) {
	nm := testbin.Peers(t)
	hoist := testbin.Build(t, "hoist-mcp")
	server := peerBin(t, nm, "mcp-server-everything")

	direct := inspect(t, nm, server)
	rec := t.TempDir()
	proxied := inspect(t, nm, hoist, "--record", rec, "--", server)

	m, _ := direct.(map[string]any)
	if tools, _ := m["tools"].([]any); len(tools) < 5 {
		t.Fatalf("mcp-inspector-cli listed %d tools directly, want server-everything's dozen: %v", len(tools), direct)
	}
	if diff := cmp.Diff(direct, proxied); diff != "" {
		t.Errorf("tools/list through hoist-mcp differs from tools/list directly (-direct +proxied):\n%s", diff)
	}

	l := readLog(t, rec)
	l.checkHeader(t, []string{server}, "")
	l.checkPairs(t)
	var listed any
	for _, ll := range l.lines {
		if ll.From == "client" && ll.msg.Method == "tools/list" {
			for _, r := range l.lines {
				if r.From == "server" && r.msg.isResponse() && string(r.msg.ID) == string(ll.msg.ID) {
					if err := json.Unmarshal(r.msg.Result, &listed); err != nil {
						t.Fatalf("%s:%d: %v", l.path, r.n, err)
					}
				}
			}
		}
	}
	if diff := cmp.Diff(direct, listed); diff != "" {
		t.Errorf("the tools/list result in the log differs from what the inspector printed (-printed +logged):\n%s", diff)
	}
}

// TestInspectorOverHTTP lists server-everything's tools with the inspector
// CLI over Streamable HTTP through hoist-mcp --listen, and through --listen
// in front of hoist-mcp --upstream's own HTTP session: both must equal the
// list it gets directly over stdio.
func TestInspectorOverHTTP(t *testing.T) {
	nm := testbin.Peers(t)
	server := peerBin(t, nm, "mcp-server-everything")
	direct := inspect(t, nm, server)

	proxy := exec.Command(testbin.Build(t, "hoist-mcp"), "--listen", "127.0.0.1:0", "--", server)
	proxy.Env = testbin.Env()
	stdout, err := proxy.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		proxy.Process.Signal(syscall.SIGTERM)
		proxy.Wait()
	})
	url, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("hoist-mcp --listen printed no URL: %v", err)
	}
	url = strings.TrimSpace(url)
	if diff := cmp.Diff(direct, inspect(t, nm, url, "--transport", "http")); diff != "" {
		t.Errorf("tools/list over HTTP through hoist-mcp --listen differs from stdio directly (-direct +proxied):\n%s", diff)
	}
	// The same through a stdio proxy whose server is the --listen one.
	upstream := inspect(t, nm, testbin.Build(t, "hoist-mcp"), "--upstream", url)
	if diff := cmp.Diff(direct, upstream); diff != "" {
		t.Errorf("tools/list through hoist-mcp --upstream differs (-direct +proxied):\n%s", diff)
	}
}
