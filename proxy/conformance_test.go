package proxy_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"

	"github.com/hoist-mcp/hoist/internal/testbin"
)

// scenarioLine is one scenario's summary in the conformance suite's output.
var scenarioLine = regexp.MustCompile(`^[✓✗] (\S+): (\d+) passed, (\d+) failed`)

// conformance runs the server scenarios of @modelcontextprotocol/conformance
// against url and returns each scenario's passed and failed checks.
func conformance(t *testing.T, peers, url string) map[string][2]int {
	t.Helper()
	cmd := exec.Command(filepath.Join(peers, ".bin", "conformance"), "server", "--url", url)
	cmd.Dir = t.TempDir()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Run() // it exits non-zero when any check fails
	res := map[string][2]int{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		if m := scenarioLine.FindStringSubmatch(sc.Text()); m != nil {
			p, _ := strconv.Atoi(m[2])
			f, _ := strconv.Atoi(m[3])
			res[m[1]] = [2]int{p, f}
		}
	}
	if len(res) == 0 {
		t.Fatalf("the conformance suite reported no scenario:\n%s", out.String())
	}
	return res
}

func totals(res map[string][2]int) (passed, all int) {
	for _, r := range res {
		passed += r[0]
		all += r[0] + r[1]
	}
	return passed, all
}

// TestConformance runs the conformance suite's server scenarios against
// server-everything's own HTTP endpoint and against hoist-mcp --listen in
// front of server-everything on stdio: the proxy must pass every check the
// server passes on its own. Most scenarios expect fixtures server-everything
// lacks, so neither passes them all; it is the comparison that counts.
func TestConformance(t *testing.T) {
	peers := testbin.Peers(t)
	direct := conformance(t, peers, startEverythingHTTP(t, peers))

	l := startListen(t, "--", filepath.Join(peers, ".bin", "mcp-server-everything"))
	proxied := conformance(t, peers, l.url)
	l.cmd.Process.Signal(syscall.SIGTERM)
	l.wait()

	for name, d := range direct {
		if p, ok := proxied[name]; !ok || p[0] < d[0] {
			t.Errorf("scenario %s: %d checks pass directly, %d through the proxy", name, d[0], p[0])
		}
	}
	dp, da := totals(direct)
	pp, pa := totals(proxied)
	t.Logf("conformance checks that pass: server-everything's own endpoint %d of %d; through hoist-mcp --listen %d of %d", dp, da, pp, pa)
	if pp < dp {
		t.Errorf("the proxy passes %d checks, fewer than the server's own %d", pp, dp)
	}
}
