package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hoist-mcp/hoist/internal/cli"
	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/internal/testbin"
)

// runInProcess runs hoist in-process and returns its stdout, stderr and exit code.
func runInProcess(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Main(context.Background(), args, iostreams.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
	return out.String(), errOut.String(), code
}

func TestInitStdio(t *testing.T) {
	out, _, code := runInProcess(t, "init", "--domain", "orders", "--json", "--", "npx", "-y", "some-mcp-server")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var c struct {
		Mode    string
		Command []string
		Cursor  map[string]map[string]map[string]any
	}
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// The command is hoist-mcp's absolute path where one is found
	// (TestInitAbsolutePaths), else its name.
	want := []string{"hoist-mcp", "--record", "~/.hoist/logs", "--domain", "orders", "--", "npx", "-y", "some-mcp-server"}
	if c.Mode != "stdio" || len(c.Command) == 0 || filepath.Base(c.Command[0]) != "hoist-mcp" || strings.Join(c.Command[1:], " ") != strings.Join(want[1:], " ") {
		t.Errorf("mode %s command %q, want stdio %q", c.Mode, c.Command, want)
	}
	if c.Cursor["mcpServers"]["orders"]["command"] != c.Command[0] {
		t.Errorf("cursor entry %v", c.Cursor)
	}
}

func TestInitUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"init", "--listen", "127.0.0.1:8931"}, "no server command"},
		{[]string{"init", "--listen", "0.0.0.0:8931", "--", "srv"}, "only loopback addresses"},
		{[]string{"init", "--listen", "127.0.0.1", "--", "srv"}, "want host:port"},
		{[]string{"init", "--listen-token-file", "f", "--", "srv"}, "needs --listen"},
		{[]string{"init", "--bogus"}, "unknown flag"},
	} {
		_, errOut, code := runInProcess(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("hoist %q: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}

func TestVersion(t *testing.T) {
	out, _, code := runInProcess(t, "--version")
	if code != 0 || !strings.HasPrefix(out, "hoist ") {
		t.Errorf("--version: exit %d, %q", code, out)
	}
}

// TestInitListenEndToEnd starts the proxy with the command hoist init
// prints and connects the TypeScript SDK client to the URL it prints.
func TestInitListenEndToEnd(t *testing.T) {
	peers := testbin.Peers(t)
	hoist := testbin.Build(t, "hoist")
	dir := t.TempDir()
	addr := "127.0.0.1:" + freePort(t)
	out, err := exec.Command(hoist, "init", "--listen", addr, "--record", dir, "--domain", "demo", "--json",
		"--", filepath.Join(peers, ".bin", "mcp-server-everything")).Output()
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Command    []string
		URL        string
		ClaudeCode string `json:"claude_code"`
	}
	if err := json.Unmarshal(out, &c); err != nil {
		t.Fatal(err)
	}
	if c.URL != "http://"+addr+"/mcp" || !strings.HasSuffix(c.ClaudeCode, " "+c.URL) {
		t.Fatalf("url %q, claude %q", c.URL, c.ClaudeCode)
	}
	proxy := exec.Command(testbin.Build(t, "hoist-mcp"), c.Command[1:]...)
	proxy.Env = testbin.Env()
	stdout, _ := proxy.StdoutPipe()
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Process.Signal(syscall.SIGTERM); proxy.Wait() })
	if l, _ := bufio.NewReader(stdout).ReadString('\n'); strings.TrimSpace(l) != c.URL {
		t.Fatalf("the proxy serves %q, init printed %q", l, c.URL)
	}
	client := exec.Command("node", filepath.Join(testbin.Root(), "proxy", "testdata", "client.mjs"), peers, "http", c.URL)
	client.Env = testbin.Env()
	res, err := client.Output()
	if err != nil {
		t.Fatalf("the TypeScript client failed through the printed URL: %v", err)
	}
	if !bytes.Contains(res, []byte("Echo: hello over http")) {
		t.Errorf("client saw %s", res)
	}
	proxy.Process.Signal(syscall.SIGTERM)
	proxy.Wait()
	if logs, _ := filepath.Glob(filepath.Join(dir, "*.jsonl")); len(logs) != 1 {
		t.Errorf("want one session log in %s, got %v", dir, logs)
	}
}

// TestInitFlow: hoist init --flow FILE prints configurations that serve the
// flow as it was learned: the flow's path (absolute, since hosts start
// servers where they like), its server's name and its domain; a flow of
// several servers needs --server-name, one of them.
func TestInitFlow(t *testing.T) {
	flowPath := filepath.Join(testbin.Root(), "proxy", "testdata", "demo.flow.json")
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(wd, flowPath)
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runInProcess(t, "init", "--flow", rel, "--json", "--", "hoist-mcp-demo")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var c struct{ Command []string }
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	want := []string{"hoist-mcp", "--record", "~/.hoist/logs", "--domain", "demo", "--server-name", "hoist-mcp-demo", "--flow", flowPath, "--", "hoist-mcp-demo"}
	if len(c.Command) == 0 || filepath.Base(c.Command[0]) != "hoist-mcp" || strings.Join(c.Command[1:], " ") != strings.Join(want[1:], " ") {
		t.Errorf("command %q\nwant    %q", c.Command, want)
	}
	if _, errOut, code := runInProcess(t, "init", "--flow", rel, "--server-name", "fs", "--", "srv"); code != 2 || !strings.Contains(errOut, `--server-name fs: the flow serves hoist-mcp-demo`) {
		t.Errorf("another server name: exit %d: %s", code, errOut)
	}
	if _, errOut, code := runInProcess(t, "init", "--flow", "no-such.flow.json", "--", "srv"); code != 1 || !strings.Contains(errOut, "no-such.flow.json") {
		t.Errorf("missing flow: exit %d: %s", code, errOut)
	}
}

// TestInitAbsolutePaths: hosts start servers in a directory and with a PATH
// of their own, so init writes hoist-mcp's absolute path (found on the PATH
// as the user's shell would, else beside the running hoist) and absolute
// --record and --listen-token-file paths; it warns when hoist-mcp is not on
// the PATH.
func TestInitAbsolutePaths(t *testing.T) {
	hoist := testbin.Build(t, "hoist")
	besideHoist := testbin.Build(t, "hoist-mcp") // built into the same directory
	onPath := t.TempDir()
	linked := filepath.Join(onPath, "hoist-mcp")
	if err := os.Symlink(besideHoist, linked); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	init := func(t *testing.T, path string, args ...string) (command []string, vscode, stderr string) {
		t.Helper()
		cmd := exec.Command(hoist, append([]string{"init", "--json"}, args...)...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "PATH="+path)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %s", err, errb.String())
		}
		var c struct {
			Command []string
			VSCode  json.RawMessage
		}
		if err := json.Unmarshal(out.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		return c.Command, string(c.VSCode), errb.String()
	}
	t.Run("on the PATH", func(t *testing.T) {
		command, vscode, stderr := init(t, onPath, "--record", "logs", "--", "srv")
		want := []string{linked, "--record", filepath.Join(work, "logs"), "--", "srv"}
		if strings.Join(command, " ") != strings.Join(want, " ") || stderr != "" {
			t.Errorf("command %q, stderr %q\nwant    %q and no warning", command, stderr, want)
		}
		if !strings.Contains(vscode, `"command": "`+linked+`"`) {
			t.Errorf("VS Code entry %s, want the absolute command", vscode)
		}
	})
	t.Run("beside hoist only", func(t *testing.T) {
		command, _, stderr := init(t, t.TempDir(), "--listen", "127.0.0.1:8931", "--listen-token-file", "token", "--", "srv")
		want := []string{besideHoist, "--listen", "127.0.0.1:8931", "--record", "~/.hoist/logs", "--listen-token-file", filepath.Join(work, "token"), "--", "srv"}
		if strings.Join(command, " ") != strings.Join(want, " ") {
			t.Errorf("command %q\nwant    %q", command, want)
		}
		if !strings.Contains(stderr, "hoist-mcp is not on the PATH") || !strings.Contains(stderr, besideHoist) {
			t.Errorf("stderr %q, want a warning naming %s", stderr, besideHoist)
		}
	})
}
