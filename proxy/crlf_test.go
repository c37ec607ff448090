package proxy_test

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestCRLFRecordedAsForwarded sends lines that end in CRLF through the
// stdio proxy to a server that echoes them. The proxy forwards the \r in
// both directions (it never changes a byte), and the log records each line
// as forwarded: the \r is the JSON whitespace that ends the message member
// of a JSON line (manual, "Log format": message is the line exactly as it
// was sent), and the last character of a raw line's text.
func TestCRLFRecordedAsForwarded(t *testing.T) {
	cmd, env := fake("echo")
	dir := t.TempDir()
	p := startProxy(t, env, append([]string{"--record", dir, "--"}, cmd...)...)
	const msg = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, want := range []string{msg + "\r\n", "not json\r\n"} {
		p.send(want)
		if got := p.readLine(); got != want {
			t.Fatalf("forwarded %q, want %q", got, want)
		}
	}
	if _, code := p.finish(); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, p.stderr)
	}
	_, lines, path := readLog(t, dir)
	if len(lines) != 4 {
		t.Fatalf("%d log lines, want 4", len(lines))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")[1:]
	for i, from := range []string{"client", "server", "client", "server"} {
		if lines[i].From != from {
			t.Errorf("log line %d is from %s, want %s", i+2, lines[i].From, from)
		}
	}
	for _, i := range []int{0, 1} {
		if !strings.HasSuffix(rows[i], `"message":`+msg+"\r}") {
			t.Errorf("log line %d = %q, want its message to end in the line's \\r", i+2, rows[i])
		}
	}
	for _, i := range []int{2, 3} {
		if lines[i].Raw == nil || *lines[i].Raw != "not json\r" {
			t.Errorf("log line %d = %q, want raw %q", i+2, rows[i], "not json\r")
		}
	}
	if bytes.Count(data, []byte("\n")) != 5 {
		t.Errorf("the log has %d line ends, want 5 (a \\r in a line is no line end)", bytes.Count(data, []byte("\n")))
	}
}
