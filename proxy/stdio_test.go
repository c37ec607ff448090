package proxy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/internal/testbin"
)

// proc is a hoist-mcp process under test, with the test as its host.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *syncBuffer
}

// syncBuffer is a bytes.Buffer safe for the exec package's copying
// goroutine and the test.
type syncBuffer struct {
	mu chan struct{}
	b  bytes.Buffer
}

func newSyncBuffer() *syncBuffer {
	s := &syncBuffer{mu: make(chan struct{}, 1)}
	return s
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu <- struct{}{}
	defer func() { <-s.mu }()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu <- struct{}{}
	defer func() { <-s.mu }()
	return s.b.String()
}

// startProxy starts hoist-mcp with args; env entries are added to the test's
// environment (the fake servers read theirs from it).
func startProxy(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := proxyProc(t, env, args...)
	p.cmd.Stderr = p.stderr
	p.start()
	return p
}

// proxyProc makes hoist-mcp's command with its stdin and stdout piped, not
// yet started: its stderr is the caller's to place.
func proxyProc(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(testbin.Build(t, "hoist-mcp"), args...)
	cmd.Env = testbin.Env(env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	return &proc{t: t, cmd: cmd, stdin: stdin, stdout: bufio.NewReaderSize(stdout, 1<<20), stderr: newSyncBuffer()}
}

// start starts the proxy, which is killed, if still running, when the test
// ends.
func (p *proc) start() {
	p.t.Helper()
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
}

// send writes lines to the proxy's stdin.
func (p *proc) send(lines ...string) {
	p.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(p.stdin, l); err != nil {
			p.t.Fatalf("writing to hoist-mcp: %v", err)
		}
	}
}

// readLine reads one line the proxy forwarded to the host.
func (p *proc) readLine() string {
	p.t.Helper()
	l, err := p.stdout.ReadString('\n')
	if err != nil {
		p.t.Fatalf("reading from hoist-mcp: %v (stderr: %s)", err, p.stderr)
	}
	return l
}

// finish closes stdin, reads the rest of stdout and returns it with the exit
// code.
func (p *proc) finish() (string, int) {
	p.t.Helper()
	p.stdin.Close()
	rest, err := io.ReadAll(p.stdout)
	if err != nil {
		p.t.Fatalf("reading from hoist-mcp: %v", err)
	}
	return string(rest), p.wait()
}

func (p *proc) wait() int {
	p.t.Helper()
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		p.t.Fatalf("waiting for hoist-mcp: %v", err)
	}
	return p.cmd.ProcessState.ExitCode()
}

// fake returns the command line of a fake server and its environment.
func fake(mode string, env ...string) ([]string, []string) {
	return []string{os.Args[0]}, append([]string{"HOIST_FAKE_SERVER=" + mode}, env...)
}

// logLine is one parsed line of a session log.
type logLine struct {
	TMS     int64           `json:"t_ms"`
	From    string          `json:"from"`
	Message json.RawMessage `json:"message"`
	Raw     *string         `json:"raw"`
}

// readLog returns the only log in dir: its header and lines, checking that
// every line parses and that times never decrease.
func readLog(t *testing.T, dir string) (map[string]any, []logLine, string) {
	t.Helper()
	all, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	var paths []string
	for _, p := range all {
		if !strings.HasSuffix(p, ".flow.jsonl") {
			paths = append(paths, p)
		}
	}
	if len(paths) != 1 {
		t.Fatalf("want one log in %s, found %v", dir, paths)
	}
	data, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(data) == 0 || data[len(data)-1] != '\n' {
		t.Fatalf("log does not end in a newline")
	}
	rows := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	var header map[string]any
	if err := json.Unmarshal([]byte(rows[0]), &header); err != nil {
		t.Fatalf("log header: %v", err)
	}
	var lines []logLine
	last := int64(0)
	for i, r := range rows[1:] {
		var l logLine
		dec := json.NewDecoder(strings.NewReader(r))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("log line %d does not parse: %v\n%s", i+2, err, r)
		}
		if (l.Message == nil) == (l.Raw == nil) {
			t.Fatalf("log line %d has neither or both of message and raw: %s", i+2, r)
		}
		if l.TMS < last {
			t.Fatalf("log line %d: t_ms %d after %d", i+2, l.TMS, last)
		}
		last = l.TMS
		lines = append(lines, l)
	}
	return header, lines, paths[0]
}

var tryIt = []string{
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"shell","version":"0"}}}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"lookup","arguments":{"text":"hello"}}}`,
	`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"update","arguments":{"text":"hi","fail":true}}}`,
}

// TestTryIt runs the manual's "Try it" sequence through the proxy in front of
// hoist-mcp-demo and checks the answers and the log line by line.
func TestTryIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs", "nested")
	p := startProxy(t, []string{"HOIST_SESSION="}, "--record", dir, "--", testbin.Build(t, "hoist-mcp-demo"))
	for _, l := range tryIt {
		p.send(l + "\n")
	}
	out, code := p.finish()
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, p.stderr)
	}
	answers := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(answers) != 4 {
		t.Fatalf("want 4 answers, got %d:\n%s", len(answers), out)
	}
	byID := map[string]string{}
	for _, a := range answers {
		var m struct{ ID json.RawMessage }
		if err := json.Unmarshal([]byte(a), &m); err != nil {
			t.Fatalf("answer %q: %v", a, err)
		}
		byID[string(m.ID)] = a
	}
	if got, want := byID["3"], `{"id":3,"jsonrpc":"2.0","result":{"content":[{"text":"{\"text\":\"hello\"}","type":"text"}],"isError":false}}`; got != want {
		t.Errorf("lookup answer\n got %s\nwant %s", got, want)
	}
	if got, want := byID["4"], `{"id":4,"jsonrpc":"2.0","result":{"content":[{"text":"{\"fail\":true,\"text\":\"hi\"}","type":"text"}],"isError":true}}`; got != want {
		t.Errorf("update answer\n got %s\nwant %s", got, want)
	}

	info, err := os.Stat(dir)
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("record dir: %v, mode %v; want 0700", err, info.Mode().Perm())
	}
	header, lines, path := readLog(t, dir)
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("log mode %v, want 0600", fi.Mode().Perm())
	}
	session, _ := header["session"].(string)
	if !regexp.MustCompile(`^\d{8}T\d{6}\.\d{3}Z-\d+$`).MatchString(session) {
		t.Errorf("session %q is not <UTC time to the ms>-<pid>", session)
	}
	if filepath.Base(path) != session+".jsonl" {
		t.Errorf("log is named %s, want %s.jsonl", filepath.Base(path), session)
	}
	if !strings.HasSuffix(session, fmt.Sprintf("-%d", p.cmd.Process.Pid)) {
		t.Errorf("session %q does not end with the proxy's pid %d", session, p.cmd.Process.Pid)
	}
	wantHeader := map[string]any{
		"hoist_mcp_log":   float64(2),
		"session":         session,
		"started_unix_ms": header["started_unix_ms"],
		"server_command":  []any{testbin.Build(t, "hoist-mcp-demo")},
		"domain":          nil,
		"agent_model":     nil,
		"host_session":    fmt.Sprintf("host-%d", os.Getpid()),
	}
	if diff := cmp.Diff(wantHeader, header); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	if ms, _ := header["started_unix_ms"].(float64); ms <= 0 {
		t.Errorf("started_unix_ms = %v", header["started_unix_ms"])
	}
	if strings.Index(string(firstLine(t, path)), `"hoist_mcp_log":2,"session":`) != 1 {
		t.Errorf("header does not start with hoist_mcp_log then session: %s", firstLine(t, path))
	}

	if len(lines) != 9 {
		t.Fatalf("want 9 wire lines in the log, got %d", len(lines))
	}
	for i, l := range tryIt {
		if lines[i].From != "client" || string(lines[i].Message) != l {
			t.Errorf("log line %d = %s %s, want client %s", i+2, lines[i].From, lines[i].Message, l)
		}
	}
	gotAnswers := map[string]bool{}
	for _, l := range lines[5:] {
		if l.From != "server" {
			t.Errorf("log line from %q, want server", l.From)
		}
		gotAnswers[string(l.Message)] = true
	}
	for _, a := range answers {
		if !gotAnswers[a] {
			t.Errorf("answer not recorded verbatim: %s", a)
		}
	}
	if first := strings.SplitN(p.stderr.String(), "\n", 2)[0]; first != "hoist-mcp: recording to "+path {
		t.Errorf("first message %q does not name the log %s", first, path)
	}
}

func firstLine(t *testing.T, path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitN(data, []byte("\n"), 2)[0]
}

// TestHeaderFields checks the flags and environment the header records, and
// that credentials in the server command are redacted.
func TestHeaderFields(t *testing.T) {
	dir := t.TempDir()
	cmd, env := fake("silent")
	args := append([]string{"--record", dir, "--domain", "orders", "--agent-model", "claude-x", "--server-name", "tickets", "--"},
		append(cmd, "--api-key", "sk-live-123", "--token=tok-456", "GITHUB_TOKEN=ghp_789", "Authorization: Bearer abc.def", "--port", "80")...)
	p := startProxy(t, append(env, "HOIST_SESSION=support-7"), args...)
	if _, code := p.finish(); code != 0 {
		t.Fatalf("exit %d: %s", code, p.stderr)
	}
	header, _, path := readLog(t, dir)
	want := []any{os.Args[0], "--api-key", "<redacted>", "--token=<redacted>", "GITHUB_TOKEN=<redacted>", "Authorization: <redacted>", "--port", "80"}
	if diff := cmp.Diff(want, header["server_command"]); diff != "" {
		t.Errorf("server_command (-want +got):\n%s", diff)
	}
	for k, v := range map[string]any{"domain": "orders", "agent_model": "claude-x", "server_name": "tickets", "host_session": "support-7"} {
		if header[k] != v {
			t.Errorf("header %s = %v, want %v", k, header[k], v)
		}
	}
	data, _ := os.ReadFile(path)
	for _, secret := range []string{"sk-live-123", "tok-456", "ghp_789", "abc.def"} {
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("the log holds the secret %q", secret)
		}
	}
}

// TestRecordTildeExpanded checks that a leading ~ means the home directory.
func TestRecordTildeExpanded(t *testing.T) {
	home := t.TempDir()
	cmd, env := fake("silent")
	p := startProxy(t, append(env, "HOME="+home), append([]string{"--record", "~/hoist/logs", "--"}, cmd...)...)
	if _, code := p.finish(); code != 0 {
		t.Fatalf("exit %d: %s", code, p.stderr)
	}
	readLog(t, filepath.Join(home, "hoist", "logs"))
}

// hostileCorpus is a stream that must cross the proxy unchanged.
func hostileCorpus() []byte {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}` + "\n")
	b.WriteString(`{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}` + "\n")
	b.WriteString(`{"jsonrpc":"2.0","id":-0.0e+00,"method":"x","params":{"s":"\u00e9\ud83d\ude00 é 😀 \"q\" \\"}}` + "\n")
	b.WriteString(`[{"jsonrpc":"2.0","id":2,"method":"a"},{"jsonrpc":"2.0","method":"b"}]` + "\n")
	b.WriteString("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"crlf\"}\r\n")
	b.WriteString("  {  \"id\" : 4 ,\"method\":\"spaced\" }  \n")
	b.WriteString("invalid utf-8: \xff\xfe\xc3\x28 end\n")
	b.WriteString("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"bad\xffutf8\"}\n")
	b.WriteString("nul \x00 inside\n")
	b.WriteString("\n\r\n")
	b.WriteString("not json at all {\n")
	big := make([]byte, 10<<20)
	for i := range big {
		big[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[i%36]
	}
	b.WriteString(`{"jsonrpc":"2.0","id":6,"method":"big","params":{"blob":"`)
	b.Write(big)
	b.WriteString("\"}}\n")
	b.WriteString(`{"jsonrpc":"2.0","id":7,"method":"last","params":{}}`) // no newline
	return b.Bytes()
}

// TestBytesExact sends a hostile corpus through the proxy in front of an
// echo server: what the server receives, and what the host gets back, equal
// what the host sent; and the log holds every line.
func TestBytesExact(t *testing.T) {
	corpus := hostileCorpus()
	nobody := closedAddr(t)
	for _, tc := range []struct {
		name      string
		args      []string
		byteByte  bool
		recording bool
	}{
		{"record", nil, false, true},
		{"record one-byte writes", nil, true, true},
		{"forward only", nil, false, false},
		{"trace", []string{"--trace"}, false, false},
		// Fail-open: a console that is not there holds nothing.
		{"console not attached", []string{"--console", nobody}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tee := filepath.Join(t.TempDir(), "server-received")
			cmd, env := fake("echo", "HOIST_FAKE_TEE="+tee)
			args := append([]string{}, tc.args...)
			if tc.recording {
				args = append(args, "--record", dir)
			}
			p := startProxy(t, env, append(append(args, "--"), cmd...)...)
			got := make(chan []byte, 1)
			go func() {
				b, _ := io.ReadAll(p.stdout)
				got <- b
			}()
			data := corpus
			if tc.byteByte {
				// One-byte writes for the small lines, then the rest at once.
				head := bytes.Index(corpus, []byte(`{"jsonrpc":"2.0","id":6,`))
				for i := 0; i < head; i++ {
					p.send(string(corpus[i : i+1]))
				}
				data = corpus[head:]
			}
			p.send(string(data))
			p.stdin.Close()
			back := <-got
			if code := p.wait(); code != 0 {
				t.Fatalf("exit %d: %s", code, p.stderr)
			}
			checkEchoed(t, tee, back, corpus)
			if !tc.recording {
				return
			}
			_, lines, _ := readLog(t, dir)
			wire := bytes.SplitAfter(corpus, []byte("\n"))
			if len(lines) != 2*len(wire) {
				t.Fatalf("log has %d lines, want %d (each of %d lines both ways)", len(lines), 2*len(wire), len(wire))
			}
			var fromClient []logLine
			for _, l := range lines {
				if l.From == "client" {
					fromClient = append(fromClient, l)
				}
			}
			for i, w := range wire {
				body := bytes.TrimSuffix(w, []byte("\n")) // a CRLF line's \r is recorded
				l := fromClient[i]
				if json.Valid(body) && !bytes.ContainsAny(body, "\xff\xfe") {
					// json.RawMessage drops the whitespace around a value.
					if !bytes.Equal(l.Message, bytes.TrimSpace(body)) {
						t.Errorf("line %d recorded as %.80q, want the message %.80q verbatim", i, l.Message, body)
					}
				} else if l.Raw == nil || *l.Raw != string([]rune(string(body))) { // each invalid byte as U+FFFD
					t.Errorf("line %d recorded as %.80q, want raw %.80q", i, l.Message, body)
				}
			}
		})
	}
}

// checkEchoed checks that an echo server read exactly corpus (its tee, at
// path tee) and that the host got exactly corpus back.
func checkEchoed(t *testing.T, tee string, back, corpus []byte) {
	t.Helper()
	received, err := os.ReadFile(tee)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(received, corpus) {
		t.Errorf("the server received %d bytes that differ from the %d sent (first difference at %d)", len(received), len(corpus), firstDiff(received, corpus))
	}
	if !bytes.Equal(back, corpus) {
		t.Errorf("the host got back %d bytes that differ from the %d sent (first difference at %d)", len(back), len(corpus), firstDiff(back, corpus))
	}
}

func firstDiff(a, b []byte) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestMaxFrameBytes checks that a line past --max-frame-bytes turns the
// stream into a raw pipe: still forwarded exactly, no longer recorded, and
// said once.
func TestMaxFrameBytes(t *testing.T) {
	dir := t.TempDir()
	cmd, env := fake("echo")
	p := startProxy(t, env, append([]string{"--record", dir, "--max-frame-bytes", "4096", "--"}, cmd...)...)
	var in bytes.Buffer
	in.WriteString(`{"jsonrpc":"2.0","id":1,"method":"small"}` + "\n")
	in.WriteString(`{"jsonrpc":"2.0","id":2,"method":"big","params":{"x":"` + strings.Repeat("y", 10000) + `"}}` + "\n")
	in.WriteString(`{"jsonrpc":"2.0","id":3,"method":"after"}` + "\n")
	in.WriteString(`{"jsonrpc":"2.0","id":4,"method":"big2","params":{"x":"` + strings.Repeat("z", 10000) + `"}}` + "\n")
	p.send(in.String())
	out, code := p.finish()
	if code != 0 {
		t.Fatalf("exit %d: %s", code, p.stderr)
	}
	if out != in.String() {
		t.Errorf("forwarded %d bytes that differ from the %d sent", len(out), in.Len())
	}
	_, lines, _ := readLog(t, dir)
	for _, l := range lines {
		if bytes.Contains(l.Message, []byte(`"after"`)) || bytes.Contains(l.Message, []byte(`"big"`)) {
			t.Errorf("a line after the raw switch was recorded: %.60s", l.Message)
		}
	}
	if len(lines) != 2 || !bytes.Contains(lines[0].Message, []byte(`"small"`)) {
		t.Errorf("want the small line recorded both ways and nothing else, got %d lines", len(lines))
	}
	stderr := p.stderr.String()
	if n := strings.Count(stderr, "--max-frame-bytes"); n != 2 {
		t.Errorf("want the raw switch said once per direction, said %d times:\n%s", n, stderr)
	}
}

// TestExitCodes covers every way a session ends.
func TestExitCodes(t *testing.T) {
	t.Run("server status passed on", func(t *testing.T) {
		cmd, env := fake("exit", "HOIST_FAKE_CODE=3")
		p := startProxy(t, env, append([]string{"--"}, cmd...)...)
		p.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
		// The server exits first; the host's stdin stays open.
		if got := p.readLine(); got != `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n" {
			t.Errorf("answer %q", got)
		}
		if code := p.wait(); code != 3 {
			t.Errorf("exit %d, want the server's 3; stderr:\n%s", code, p.stderr)
		}
	})
	t.Run("server killed by a signal", func(t *testing.T) {
		cmd, env := fake("kill-self")
		p := startProxy(t, env, append([]string{"--"}, cmd...)...)
		if code := p.wait(); code != 128+9 {
			t.Errorf("exit %d, want 137 (128+SIGKILL)", code)
		}
		if !strings.Contains(p.stderr.String(), "killed by signal 9") {
			t.Errorf("stderr does not say the server was killed:\n%s", p.stderr)
		}
	})
	t.Run("server not found", func(t *testing.T) {
		dir := t.TempDir()
		p := startProxy(t, nil, "--record", dir, "--", "no-such-mcp-server-xyz")
		if code := p.wait(); code != 125 {
			t.Errorf("exit %d, want 125", code)
		}
		if want := `hoist-mcp: cannot run "no-such-mcp-server-xyz": the command was not found on PATH`; !strings.HasPrefix(p.stderr.String(), want) {
			t.Errorf("stderr %q, want it to start %q", p.stderr, want)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("a log was left behind: %v", entries)
		}
	})
	t.Run("server not executable", func(t *testing.T) {
		script := filepath.Join(t.TempDir(), "server.sh")
		os.WriteFile(script, []byte("#!/bin/sh\n"), 0o644)
		p := startProxy(t, nil, "--", script)
		if code := p.wait(); code != 125 {
			t.Errorf("exit %d, want 125", code)
		}
		if !strings.Contains(p.stderr.String(), "permission denied; make the file executable") {
			t.Errorf("stderr %q does not explain", p.stderr)
		}
	})
	t.Run("log not creatable", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "a-file")
		os.WriteFile(file, nil, 0o600)
		cmd, env := fake("silent")
		p := startProxy(t, env, append([]string{"--record", file, "--"}, cmd...)...)
		if code := p.wait(); code != 125 {
			t.Errorf("exit %d, want 125", code)
		}
		if !strings.Contains(p.stderr.String(), "creating record directory") {
			t.Errorf("stderr %q does not explain", p.stderr)
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no command", []string{"--record", "x"}, "no server command"},
		{"unknown flag", []string{"--no-such-flag", "--", "true"}, "unknown flag: --no-such-flag"},
		{"bad retain days", []string{"--record", "x", "--retain-days", "-1", "--", "true"}, "--retain-days: must be 0 or more"},
		{"retain days without record", []string{"--retain-days", "3", "--", "true"}, "--retain-days: needs --record"},
		{"bad number", []string{"--max-frame-bytes", "lots", "--", "true"}, "invalid argument"},
	} {
		t.Run("usage "+tc.name, func(t *testing.T) {
			p := startProxy(t, nil, tc.args...)
			if code := p.wait(); code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if !strings.Contains(p.stderr.String(), tc.want) {
				t.Errorf("stderr %q does not contain %q", p.stderr, tc.want)
			}
		})
	}
	t.Run("help", func(t *testing.T) {
		p := startProxy(t, nil, "--help")
		out, code := p.finish()
		if code != 0 || out != "" {
			t.Errorf("--help: exit %d, stdout %q; want 0 and nothing on stdout (the wire)", code, out)
		}
		if !strings.Contains(p.stderr.String(), "--record DIR") {
			t.Errorf("--help does not document --record:\n%s", p.stderr)
		}
	})
}

// TestServerNeverAnswers checks that a silent server does not hold the
// proxy once the host leaves.
func TestServerNeverAnswers(t *testing.T) {
	dir := t.TempDir()
	cmd, env := fake("silent")
	p := startProxy(t, env, append([]string{"--record", dir, "--"}, cmd...)...)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}` + "\n")
	out, code := p.finish()
	if code != 0 || out != "" {
		t.Errorf("exit %d, stdout %q; want 0 and nothing", code, out)
	}
	if strings.Contains(p.stderr.String(), "before answering") {
		t.Errorf("a server that exited cleanly after the host left was reported:\n%s", p.stderr)
	}
	_, lines, _ := readLog(t, dir)
	if len(lines) != 1 || lines[0].From != "client" {
		t.Errorf("log lines %v, want the one request", lines)
	}
}

// TestStoppedInSteps checks the stop sequence for servers that ignore their
// stdin closing: SIGTERM next, and SIGKILL for one that ignores SIGTERM too.
func TestStoppedInSteps(t *testing.T) {
	for _, tc := range []struct {
		mode, said string
		code       int
		ready      bool // the server says when it ignores SIGTERM
	}{
		{"ignore-stdin", "sending SIGTERM", 128 + 15, false},
		{"ignore-term", "sending SIGKILL", 128 + 9, true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			cmd, env := fake(tc.mode)
			p := startProxy(t, env, append([]string{"--stop-grace", "100ms", "--"}, cmd...)...)
			if tc.ready {
				p.readLine()
			}
			if _, code := p.finish(); code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, p.stderr)
			}
			if !strings.Contains(p.stderr.String(), tc.said) {
				t.Errorf("stderr does not say %q:\n%s", tc.said, p.stderr)
			}
		})
	}
}

// TestSigkillMidSession kills the proxy while it works: the log it leaves
// has a header and every complete line parses.
func TestSigkillMidSession(t *testing.T) {
	dir := t.TempDir()
	p := startProxy(t, nil, "--record", dir, "--", testbin.Build(t, "hoist-mcp-demo"))
	for i := 0; i < 200; i++ {
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"lookup","arguments":{"i":%d}}}`+"\n", i, i))
	}
	for i := 0; i < 100; i++ {
		p.readLine()
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait()
	paths, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(paths) != 1 {
		t.Fatalf("want one log, found %v", paths)
	}
	data, _ := os.ReadFile(paths[0])
	complete := data[:bytes.LastIndexByte(data, '\n')+1]
	rows := bytes.Split(bytes.TrimSuffix(complete, []byte("\n")), []byte("\n"))
	if len(rows) < 1 || !bytes.HasPrefix(rows[0], []byte(`{"hoist_mcp_log":2,`)) {
		t.Fatalf("no header in the log left by SIGKILL")
	}
	for i, r := range rows {
		if !json.Valid(r) {
			t.Errorf("complete line %d does not parse: %.80q", i+1, r)
		}
	}
}

// TestStdoutNoise checks the warning for a server that logs to stdout: said
// once with the line, counted at the end, bytes forwarded unchanged.
func TestStdoutNoise(t *testing.T) {
	cmd, env := fake("noisy")
	p := startProxy(t, env, append([]string{"--"}, cmd...)...)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
	want := "debug: loading config from ./config.json\n[1,2]\n" + `{"level":30,"msg":"got a request"}` + "\n" + `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"
	out, code := p.finish()
	if code != 0 || out != want {
		t.Errorf("exit %d, forwarded %q; want 0 and %q", code, out, want)
	}
	stderr := p.stderr.String()
	if n := strings.Count(stderr, "wrote a line to stdout that is not JSON-RPC"); n != 1 {
		t.Errorf("warned %d times, want once:\n%s", n, stderr)
	}
	if !strings.Contains(stderr, `"debug: loading config from ./config.json"`) {
		t.Errorf("the warning does not quote the line:\n%s", stderr)
	}
	if !strings.Contains(stderr, "hoist-mcp: 3 line(s) the MCP server wrote to stdout were not JSON-RPC") {
		t.Errorf("no count at the end:\n%s", stderr)
	}
}

// TestEarlyExit checks the message for a server that dies before answering:
// its last 40 stderr lines, while all of its stderr still reaches the host.
func TestEarlyExit(t *testing.T) {
	cmd, env := fake("crash")
	p := startProxy(t, env, append([]string{"--"}, cmd...)...)
	if code := p.wait(); code != 2 {
		t.Errorf("exit %d, want the server's 2", code)
	}
	stderr := p.stderr.String()
	passed, msg, found := strings.Cut(stderr, "hoist-mcp: the MCP server exited with code 2 before answering anything; the last 40 line(s) of its stderr:")
	if !found {
		t.Fatalf("no early-exit message:\n%s", stderr)
	}
	var want strings.Builder
	for i := 1; i <= 50; i++ {
		fmt.Fprintf(&want, "crash-server: line %d of 50\n", i)
	}
	if passed != want.String() {
		t.Errorf("the server's stderr did not reach the host unchanged:\n%s", passed)
	}
	if !strings.Contains(msg, "\n    crash-server: line 11 of 50\n") || strings.Contains(msg, "line 10 of 50") || !strings.HasSuffix(msg, "line 50 of 50\n") {
		t.Errorf("message does not quote exactly the last 40 lines:\n%s", msg)
	}

	t.Run("inherit-stderr", func(t *testing.T) {
		p := startProxy(t, env, append([]string{"--inherit-stderr", "--"}, cmd...)...)
		p.wait()
		stderr := p.stderr.String()
		if !strings.Contains(stderr, "crash-server: line 50 of 50") || !strings.Contains(stderr, "its stderr is above (--inherit-stderr)") {
			t.Errorf("stderr:\n%s", stderr)
		}
	})
}

// TestTrace checks one stderr line per frame with direction, size and
// method or id.
func TestTrace(t *testing.T) {
	p := startProxy(t, nil, "--trace", "--", testbin.Build(t, "hoist-mcp-demo"))
	p.send(tryIt[0]+"\n", tryIt[1]+"\n")
	p.readLine()
	_, code := p.finish()
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	stderr := p.stderr.String()
	for _, want := range []string{
		fmt.Sprintf("hoist-mcp: trace host -> server %d B request initialize id=1\n", len(tryIt[0])+1),
		fmt.Sprintf("hoist-mcp: trace host -> server %d B notification notifications/initialized\n", len(tryIt[1])+1),
		"hoist-mcp: trace server -> host ",
		" B response id=1\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("trace lacks %q:\n%s", want, stderr)
		}
	}
}

// TestDemoConcurrentCalls checks that the demo serves calls concurrently: a
// slow call sent first is answered after a quick one sent second.
func TestDemoConcurrentCalls(t *testing.T) {
	p := startProxy(t, nil, "--", testbin.Build(t, "hoist-mcp-demo"))
	p.send(`{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"lookup","arguments":{"delay_ms":1000}}}`+"\n",
		`{"jsonrpc":"2.0","id":"quick","method":"tools/call","params":{"name":"lookup","arguments":{}}}`+"\n")
	if first := p.readLine(); !strings.Contains(first, `"id":"quick"`) {
		t.Errorf("first answer %s, want the quick call's", first)
	}
	if second := p.readLine(); !strings.Contains(second, `"id":"slow"`) {
		t.Errorf("second answer %s, want the slow call's", second)
	}
	p.finish()
}

// TestRetainDays checks that old session files are pruned at start, and
// nothing else.
func TestRetainDays(t *testing.T) {
	dir := t.TempDir()
	old := []string{"20200101T000000.000Z-1.jsonl", "20200101T000000.000Z-1.flow.jsonl"}
	keep := []string{"notes.txt", "20260101T000000.000Z-2.jsonl"}
	for _, n := range append(old, keep...) {
		os.WriteFile(filepath.Join(dir, n), []byte("{}\n"), 0o600)
	}
	past := mustParseDays(t, 40)
	for _, n := range append([]string{"notes.txt"}, old...) {
		os.Chtimes(filepath.Join(dir, n), past, past)
	}
	cmd, env := fake("silent")
	p := startProxy(t, env, append([]string{"--record", dir, "--retain-days", "30", "--"}, cmd...)...)
	if _, code := p.finish(); code != 0 {
		t.Fatalf("exit %d: %s", code, p.stderr)
	}
	for _, n := range old {
		if _, err := os.Stat(filepath.Join(dir, n)); !os.IsNotExist(err) {
			t.Errorf("%s was not pruned", n)
		}
	}
	for _, n := range keep {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s was pruned: %v", n, err)
		}
	}
	if !strings.Contains(p.stderr.String(), "deleted 2 session file(s) older than 30 days") {
		t.Errorf("stderr does not report the pruning:\n%s", p.stderr)
	}
}

func mustParseDays(t *testing.T, days int) time.Time {
	t.Helper()
	return time.Now().Add(-time.Duration(days) * 24 * time.Hour)
}

// TestSigtermEndsSession checks that SIGTERM to the proxy ends the session as
// the host closing stdin does: the server's stdin is closed, the log closed
// whole, and the server's status passed on.
func TestSigtermEndsSession(t *testing.T) {
	dir := t.TempDir()
	p := startProxy(t, nil, "--record", dir, "--", testbin.Build(t, "hoist-mcp-demo"))
	p.send(tryIt[0] + "\n")
	p.readLine()
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(); code != 0 {
		t.Errorf("exit %d, want the demo's 0 after its stdin closed; stderr:\n%s", code, p.stderr)
	}
	_, lines, _ := readLog(t, dir)
	if len(lines) != 2 {
		t.Errorf("log has %d wire lines, want the request and its answer", len(lines))
	}
}

// TestContext checks that the conversation the host appends to --context is
// logged as context entries just before each tools/call, each line once.
func TestContext(t *testing.T) {
	dir := t.TempDir()
	ctxDir := t.TempDir()
	p := startProxy(t, []string{"HOIST_SESSION=conv-1"}, "--record", dir, "--context", filepath.Join(ctxDir, "{session}.jsonl"), "--", testbin.Build(t, "hoist-mcp-demo"))
	ctx := filepath.Join(ctxDir, "conv-1.jsonl")
	appendLine := func(l string) {
		f, err := os.OpenFile(ctx, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(l)
		f.Close()
	}
	p.send(tryIt[0] + "\n")
	p.readLine()
	appendLine(`{"role":"user","content":"cancel my order"}` + "\n" + `{"role":"assistant","content":"which one?"}` + "\n" + `{"role":"user","content":"the`)
	p.send(tryIt[3] + "\n")
	p.readLine()
	appendLine(` chair"}` + "\n")
	p.send(tryIt[4] + "\n")
	p.readLine()
	if _, code := p.finish(); code != 0 {
		t.Fatalf("exit %d: %s", code, p.stderr)
	}
	_, lines, _ := readLog(t, dir)
	var got []string
	for _, l := range lines {
		if l.From == "context" {
			got = append(got, "context "+string(l.Message))
		} else if l.From == "client" {
			got = append(got, "client "+string(l.Message)[:40])
		}
	}
	want := []string{
		"client " + tryIt[0][:40],
		`context {"role":"user","content":"cancel my order"}`,
		`context {"role":"assistant","content":"which one?"}`,
		"client " + tryIt[3][:40],
		`context {"role":"user","content":"the chair"}`,
		"client " + tryIt[4][:40],
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}

// TestContextWithoutRecord: --context works without --record (flows and
// guards read the conversation even when nothing is logged), and serving a
// flow beside it still looks things up.
func TestContextWithoutRecord(t *testing.T) {
	conv := filepath.Join(t.TempDir(), "conv.jsonl")
	os.WriteFile(conv, []byte(`{"role":"user","content":"look up a"}`+"\n"), 0o600)
	p := startProxy(t, nil, "--context", conv, "--flow", demoFlow, "--flow-log", filepath.Join(t.TempDir(), "flow.jsonl"), "--", testbin.Build(t, "hoist-mcp-demo"))
	p.send(tryIt[0]+"\n", tryIt[1]+"\n", tryIt[2]+"\n")
	p.readLine()
	p.readLine()
	p.send(call(7, `{"text":"a","next":"b"}`))
	if item := lookedUp(t, p.readLine()); !strings.Contains(item, `lookup {"text":"b"}:`) {
		t.Errorf("no lookup appended: %q", item)
	}
	if _, code := p.finish(); code != 0 {
		t.Fatalf("exit %d: %s", code, p.stderr)
	}
}

// A server that leaves a process of its own session holding its stdout
// (out of the reach of the group the proxy signals) does not keep the
// proxy waiting: once the server has exited and nothing has come on the
// pipe for a while, the proxy stops reading it and ends, having forwarded
// everything the server wrote.
func TestDrainStopsOnAnIdlePipe(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "holder.pid")
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	script := `setsid sh -c 'echo $$ > "$1"; exec sleep 600' sh "$1" & exec cat`
	p := startProxy(t, nil, "--", "sh", "-c", script, "sh", pidFile)
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"
	p.send(ping)
	if got := p.readLine(); got != ping {
		t.Fatalf("the echo: %q", got)
	}
	if rest, code := p.finish(); rest != "" || code != 0 {
		t.Errorf("after the host closed: more output %q, exit %d; stderr:\n%s", rest, code, p.stderr)
	}
}
