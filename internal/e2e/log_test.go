package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/mcplog"
)

// sessionLog is a session log read back, each line checked against the log
// format (hoist-mcp manual, "Log format").
type sessionLog struct {
	path   string
	header mcplog.Header
	lines  []logLine
}

// logLine is one wire line of a log.
type logLine struct {
	n       int             // line number in the file, from 1
	TMS     *int64          `json:"t_ms"`
	From    string          `json:"from"`
	Message json.RawMessage `json:"message"`
	Raw     *string         `json:"raw"`

	msg wireMessage // Message decoded
}

// wireMessage holds the members of a JSON-RPC message the checks need.
type wireMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func (m wireMessage) isRequest() bool  { return m.Method != "" && m.ID != nil }
func (m wireMessage) isResponse() bool { return m.Method == "" && m.ID != nil }

// readLog reads the one session log in dir; it fails the test when there is
// not exactly one, or when a line does not parse as the format says.
func readLog(t *testing.T, dir string) *sessionLog {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 1 {
		t.Fatalf("want one session log in %s, found %d: %q", dir, len(paths), paths)
	}
	data, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	l := &sessionLog{path: paths[0]}
	if len(data) == 0 || data[len(data)-1] != '\n' {
		t.Fatalf("%s: the log does not end with a complete line", l.path)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	var lastMS int64
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if n == 1 {
			if err := dec.Decode(&l.header); err != nil {
				t.Fatalf("%s:1: the header does not parse as the format's header: %v\n%s", l.path, err, line)
			}
			continue
		}
		ll := logLine{n: n}
		if err := dec.Decode(&ll); err != nil {
			t.Fatalf("%s:%d: the line does not parse as a wire line: %v\n%.300s", l.path, n, err, line)
		}
		switch {
		case ll.TMS == nil:
			t.Errorf("%s:%d: no t_ms", l.path, n)
		case *ll.TMS < lastMS:
			t.Errorf("%s:%d: t_ms %d is before the previous line's %d", l.path, n, *ll.TMS, lastMS)
		default:
			lastMS = *ll.TMS
		}
		if ll.From != mcplog.FromClient && ll.From != mcplog.FromServer {
			t.Errorf("%s:%d: from is %q, want client or server", l.path, n, ll.From)
		}
		if ll.Raw != nil || ll.Message == nil {
			t.Errorf("%s:%d: every line of this session is JSON-RPC, but this one is not stored as message: %.300s", l.path, n, line)
			continue
		}
		if err := json.Unmarshal(ll.Message, &ll.msg); err != nil {
			t.Errorf("%s:%d: message is not a JSON-RPC object: %v", l.path, n, err)
		}
		l.lines = append(l.lines, ll)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s: %v", l.path, err)
	}
	return l
}

// checkHeader checks the header's members that this session determines.
// An empty hostSession accepts any host-<pid>.
func (l *sessionLog) checkHeader(t *testing.T, serverCommand []string, hostSession string) {
	t.Helper()
	h := l.header
	if h.Log != mcplog.Version {
		t.Errorf("header: hoist_mcp_log is %d, want %d", h.Log, mcplog.Version)
	}
	if want := strings.TrimSuffix(filepath.Base(l.path), ".jsonl"); h.Session != want {
		t.Errorf("header: session is %q, but the file is named for %q", h.Session, want)
	}
	if h.StartedUnixMS <= 0 {
		t.Errorf("header: started_unix_ms is %d", h.StartedUnixMS)
	}
	if diff := cmp.Diff(serverCommand, h.ServerCommand); diff != "" {
		t.Errorf("header: server_command (-want +got):\n%s", diff)
	}
	if hostSession == "" {
		if !hostPid.MatchString(h.HostSession) {
			t.Errorf("header: host_session is %q, want host-<parent pid>", h.HostSession)
		}
	} else if h.HostSession != hostSession {
		t.Errorf("header: host_session is %q, want %q (the proxy's parent, the client)", h.HostSession, hostSession)
	}
}

var hostPid = regexp.MustCompile(`^host-[1-9][0-9]*$`)

// checkPairs checks that every request in the log, from either side, is
// followed by exactly one response from the other side with its id, and
// that no response comes before its request.
func (l *sessionLog) checkPairs(t *testing.T) {
	t.Helper()
	type key struct{ from, id string }
	open := map[key]int{} // request → its line
	other := map[string]string{mcplog.FromClient: mcplog.FromServer, mcplog.FromServer: mcplog.FromClient}
	for _, ll := range l.lines {
		m := ll.msg
		switch {
		case m.isRequest():
			k := key{ll.From, string(m.ID)}
			if prev, ok := open[k]; ok {
				t.Errorf("%s:%d: request id %s from the %s is reused while line %d is unanswered", l.path, ll.n, m.ID, ll.From, prev)
			}
			open[k] = ll.n
		case m.isResponse():
			k := key{other[ll.From], string(m.ID)}
			if _, ok := open[k]; !ok {
				t.Errorf("%s:%d: response id %s from the %s comes before (or without) its request", l.path, ll.n, m.ID, ll.From)
			}
			delete(open, k)
		}
	}
	for k, n := range open {
		t.Errorf("%s:%d: request id %s from the %s has no response in the log", l.path, n, k.id, k.from)
	}
}

// checkWire checks that the log holds exactly the messages the client sent
// and received, each direction in order.
func (l *sessionLog) checkWire(t *testing.T, sent, received []any) {
	t.Helper()
	var fromClient, fromServer []any
	for _, ll := range l.lines {
		var v any
		if err := json.Unmarshal(ll.Message, &v); err != nil {
			t.Fatalf("%s:%d: %v", l.path, ll.n, err)
		}
		if ll.From == mcplog.FromClient {
			fromClient = append(fromClient, v)
		} else {
			fromServer = append(fromServer, v)
		}
	}
	if diff := cmp.Diff(normalize(sent), normalize(fromClient)); diff != "" {
		t.Errorf("the log's client lines are not what the client sent (-sent +logged):\n%s", diff)
	}
	if diff := cmp.Diff(normalize(received), normalize(fromServer)); diff != "" {
		t.Errorf("the log's server lines are not what the client received (-received +logged):\n%s", diff)
	}
}

// checkProgress checks that the log holds the tools/call of tool with a
// progress token, then want progress notifications for that token, then
// the call's response.
func (l *sessionLog) checkProgress(t *testing.T, tool string, want int) {
	t.Helper()
	var call *logLine
	var token json.RawMessage
	for i := range l.lines {
		ll := &l.lines[i]
		if ll.From != mcplog.FromClient || ll.msg.Method != "tools/call" {
			continue
		}
		var p struct {
			Name string `json:"name"`
			Meta struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
		}
		if json.Unmarshal(ll.msg.Params, &p) == nil && p.Name == tool {
			call, token = ll, p.Meta.ProgressToken
			break
		}
	}
	if call == nil {
		t.Fatalf("%s: no tools/call of %s from the client in the log", l.path, tool)
	}
	if token == nil {
		t.Fatalf("%s:%d: the tools/call of %s has no progressToken", l.path, call.n, tool)
	}
	got := 0
	for _, ll := range l.lines {
		if ll.n < call.n || ll.From != mcplog.FromServer {
			continue
		}
		if ll.msg.isResponse() && bytes.Equal(ll.msg.ID, call.msg.ID) {
			break
		}
		if ll.msg.Method != "notifications/progress" {
			continue
		}
		var p struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		}
		if json.Unmarshal(ll.msg.Params, &p) == nil && bytes.Equal(p.ProgressToken, token) {
			got++
		}
	}
	if got != want {
		t.Errorf("%s: %d progress notifications for token %s between the tools/call of %s (line %d) and its response, want %d", l.path, got, token, tool, call.n, want)
	}
}
