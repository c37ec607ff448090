package democli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/internal/testbin"
)

func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

var shippedDB = filepath.Join(testbin.Root(), "testdata", "tau2", "db", "retail.json")

const (
	cancelW6779827 = `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"cancel_pending_order","arguments":{"order_id":"#W6779827","reason":"no longer needed"}}}`
	readW6779827   = `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_order_details","arguments":{"order_id":"#W6779827"}}}`
)

func req(format string, id int) string { return strings.Replace(format, "%d", itoa(id), 1) }

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// answerText reads a tools/call answer's text.
func answerText(t *testing.T, line []byte) (id int, text string) {
	t.Helper()
	var a struct {
		ID     int `json:"id"`
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal(line, &a); err != nil || len(a.Result.Content) != 1 {
		t.Fatalf("answer %s", line)
	}
	return a.ID, a.Result.Content[0].Text
}

// TestTau2Stdio sends a write and the reads after it in one burst, without
// waiting for answers: the world runs them in order, so each read sees the
// write before it, and the answers come in the order of the requests.
func TestTau2Stdio(t *testing.T) {
	cmd := exec.Command(testbin.Build(t, "hoist-mcp-demo"), "--world", "tau2-retail", "--db", shippedDB)
	cmd.Env = testbin.Env()
	cmd.Stdin = strings.NewReader(strings.Join([]string{
		req(readW6779827, 1), req(cancelW6779827, 2), req(readW6779827, 3), req(readW6779827, 4),
	}, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hoist-mcp-demo: %v", err)
	}
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	if len(lines) != 4 {
		t.Fatalf("%d answers:\n%s", len(lines), out)
	}
	for i, line := range lines {
		id, text := answerText(t, line)
		want := `"status": "cancelled"`
		if i == 0 {
			want = `"status": "pending"`
		}
		if id != i+1 || !strings.Contains(text, want) {
			t.Errorf("answer %d: id %d, %s; want %s", i, id, text, want)
		}
	}
}

// TestTau2HTTPSessions checks that each Streamable HTTP session starts from
// the database as loaded: a cancel in one is not seen by the other.
func TestTau2HTTPSessions(t *testing.T) {
	cmd := exec.Command(testbin.Build(t, "hoist-mcp-demo"), "--world", "tau2-retail", "--db", shippedDB, "--http", "127.0.0.1:0")
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
	type session struct{ id string }
	post := func(s *session, body string) []byte {
		t.Helper()
		r, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if s.id != "" {
			r.Header.Set("Mcp-Session-Id", s.id)
			r.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			s.id = id
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
			t.Fatalf("%s: %s %s", body, resp.Status, b)
		}
		var data []byte
		for _, l := range strings.Split(string(b), "\n") {
			if d, ok := strings.CutPrefix(l, "data: "); ok {
				data = []byte(d)
			}
		}
		if data == nil {
			data = b
		}
		return data
	}
	open := func() *session {
		s := &session{}
		post(s, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}`)
		post(s, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		return s
	}
	a, b := open(), open()
	if _, text := answerText(t, post(a, req(cancelW6779827, 2))); !strings.Contains(text, `"status": "cancelled"`) {
		t.Fatalf("cancel: %s", text)
	}
	if _, text := answerText(t, post(a, req(readW6779827, 3))); !strings.Contains(text, `"status": "cancelled"`) {
		t.Errorf("the session's own read: %s", text)
	}
	if _, text := answerText(t, post(b, req(readW6779827, 2))); !strings.Contains(text, `"status": "pending"`) {
		t.Errorf("the other session's read: %s", text)
	}
	if _, text := answerText(t, post(open(), req(readW6779827, 2))); !strings.Contains(text, `"status": "pending"`) {
		t.Errorf("a new session's read: %s", text)
	}
}

func TestTau2BadDB(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "retail.json")
	os.WriteFile(bad, []byte("{\"products\": {},\n\"users\": [],\n\"orders\": {}}"), 0o600)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"not the database", []string{"--db", bad}, "hoist-mcp-demo: " + bad + ":2: users: want an object\n"},
		{"no such file", []string{"--db", filepath.Join(dir, "none.json")}, "hoist-mcp-demo: reading the retail database: open " + filepath.Join(dir, "none.json") + ": no such file or directory\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(t.Context(), append([]string{"--world", "tau2-retail"}, tc.args...), iostreams.Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
			if code != ExitUsage || errb.String() != tc.want || out.Len() != 0 {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and %q", code, out.String(), errb.String(), tc.want)
			}
		})
	}
}

// TestTau2DefaultDB: without --db, the world serves the database the
// program carries, from any directory (the test's binary is not in a
// checkout, and neither is its working directory).
func TestTau2DefaultDB(t *testing.T) {
	cmd := exec.Command(testbin.Build(t, "hoist-mcp-demo"), "--world", "tau2-retail")
	cmd.Env = testbin.Env()
	cmd.Dir = t.TempDir()
	cmd.Stdin = strings.NewReader(req(readW6779827, 1) + "\n")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v; stderr %s", err, errb.String())
	}
	if want := `\"status\": \"pending\"`; !strings.Contains(out.String(), want) {
		t.Errorf("stdout %s, want %s in it", out.String(), want)
	}
}
