package e2e

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/internal/testbin"
)

// transcript is what testdata/everything.cjs prints: what the TypeScript
// SDK's client saw of one session.
type transcript struct {
	// Server is the initialize result as the client keeps it.
	Server any `json:"server"`
	// Steps are the client's calls in order, each with its result or error.
	Steps []step `json:"steps"`
	// Progress is what the SDK handed to onprogress; racy in the SDK itself
	// (see everything.cjs), so it is not compared.
	Progress []any `json:"progress"`
	// Notifications are those no other handler took (list_changed).
	Notifications []any `json:"notifications"`
	// ServerRequests are the requests the server sent the client.
	ServerRequests []any `json:"serverRequests"`
	// Sent and Received are every message on the wire, each direction in
	// its order.
	Sent     []any `json:"sent"`
	Received []any `json:"received"`
	// Stderr is what the server (and the proxy) wrote on stderr.
	Stderr string `json:"stderr"`
	// ClientPid is the node process's pid, the proxy's parent.
	ClientPid int `json:"clientPid"`
	// Exit is how the child ended after the client closed its stdin.
	Exit struct {
		Code   *int    `json:"code"`
		Signal *string `json:"signal"`
	} `json:"exit"`
}

type step struct {
	Name    string `json:"name"`
	Request any    `json:"request"`
	Result  any    `json:"result,omitempty"`
	Error   any    `json:"error,omitempty"`
}

// everything runs testdata/everything.cjs against the command argv and
// returns its transcript.
func everything(t *testing.T, nodeModules string, argv ...string) transcript {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("testdata", "everything.cjs"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", append([]string{script, nodeModules}, argv...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = testbin.Env()
	out := run(t, "the TypeScript SDK client (testdata/everything.cjs)", cmd)
	var tr transcript
	if err := json.Unmarshal(out, &tr); err != nil {
		t.Fatalf("decoding the client's transcript: %v\n%s", err, out)
	}
	return tr
}

// createdAt matches the one value server-everything generates in this
// session: the time in its dynamic text resource ("… created at 11:09:07 PM").
var createdAt = regexp.MustCompile(`^(Resource \d+: This is a plaintext resource created at ).+$`)

// longString is the length past which strings are compared by digest, so
// that a failure prints a readable diff rather than 300 KiB of x.
const longString = 4096

// normalize returns a copy of the JSON value v with the server's generated
// values replaced by placeholders and long strings by their digest.
func normalize(v any) any {
	switch v := v.(type) {
	case string:
		if createdAt.MatchString(v) {
			return createdAt.ReplaceAllString(v, "${1}<time>")
		}
		if len(v) > longString {
			return fmt.Sprintf("<%d bytes, sha256 %x>", len(v), sha256.Sum256([]byte(v)))
		}
		return v
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = normalize(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = normalize(e)
		}
		return out
	}
	return v
}

// comparable returns the parts of tr that must be the same with and without
// the proxy, normalized. Stderr (the proxy speaks there), the pid, and the
// SDK's racy onprogress list are left out; the progress notifications
// themselves are in Received.
func comparable(tr transcript) transcript {
	c := tr
	c.Stderr, c.ClientPid, c.Progress = "", 0, nil
	c.Server = normalize(tr.Server)
	c.Steps = make([]step, len(tr.Steps))
	for i, s := range tr.Steps {
		c.Steps[i] = step{Name: s.Name, Request: normalize(s.Request), Result: normalize(s.Result), Error: normalize(s.Error)}
	}
	c.Notifications, _ = normalize(tr.Notifications).([]any)
	c.ServerRequests, _ = normalize(tr.ServerRequests).([]any)
	c.Sent, _ = normalize(tr.Sent).([]any)
	c.Received, _ = normalize(tr.Received).([]any)
	return c
}

// TestEverythingThroughProxy drives server-everything with the TypeScript
// SDK client directly and through hoist-mcp --record: the client must see
// the same session both ways, and the log must hold it (issue 2, point 4).
func TestEverythingThroughProxy(t *testing.T) {
	nm := testbin.Peers(t)
	hoist := testbin.Build(t, "hoist-mcp")
	server := peerBin(t, nm, "mcp-server-everything")

	direct := everything(t, nm, server)
	checkSession(t, "directly", direct)

	rec := t.TempDir()
	proxied := everything(t, nm, hoist, "--record", rec, "--", server)
	checkSession(t, "through hoist-mcp", proxied)

	if diff := cmp.Diff(comparable(direct), comparable(proxied)); diff != "" {
		t.Errorf("the client saw a different session through hoist-mcp than directly (-direct +proxied):\n%s", diff)
	}
	if !strings.Contains(proxied.Stderr, "hoist-mcp: recording to "+rec+string(filepath.Separator)) {
		t.Errorf("hoist-mcp's stderr does not name the log in %s:\n%s", rec, proxied.Stderr)
	}
	if !strings.Contains(proxied.Stderr, "Starting default (STDIO) server") {
		t.Errorf("server-everything's stderr did not reach the host through hoist-mcp:\n%s", proxied.Stderr)
	}

	l := readLog(t, rec)
	l.checkHeader(t, []string{server}, fmt.Sprintf("host-%d", proxied.ClientPid))
	l.checkPairs(t)
	l.checkWire(t, proxied.Sent, proxied.Received)
	l.checkProgress(t, "trigger-long-running-operation", 4)
}

// checkSession checks that one session went as server-everything's tools
// say, so that two transcripts broken the same way do not pass as equal.
func checkSession(t *testing.T, how string, tr transcript) {
	t.Helper()
	if tr.Exit.Code == nil || *tr.Exit.Code != 0 {
		t.Errorf("%s: the server's side exited with %v (signal %v) after the client closed stdin, want code 0", how, deref(tr.Exit.Code), deref(tr.Exit.Signal))
	}
	byName := map[string]step{}
	for _, s := range tr.Steps {
		byName[s.Name] = s
		if s.Error != nil {
			t.Errorf("%s: %s failed: %v", how, s.Name, s.Error)
		}
	}
	if got := len(tr.Steps); got != 15 {
		t.Errorf("%s: the client made %d calls, want 15", how, got)
	}
	text := func(name string) string {
		r, _ := byName[name].Result.(map[string]any)
		c, _ := r["content"].([]any)
		if len(c) == 0 {
			return ""
		}
		first, _ := c[0].(map[string]any)
		s, _ := first["text"].(string)
		return s
	}
	if got, want := text("tools/call echo: plain text"), "Echo: hello through hoist"; got != want {
		t.Errorf("%s: echo answered %q, want %q", how, got, want)
	}
	if got, want := text("tools/call echo: a 300 KiB message"), "Echo: "+strings.Repeat("x", 300<<10); got != want {
		t.Errorf("%s: echo of a 300 KiB message came back as %d bytes, want %d", how, len(got), len(want))
	}
	if got, want := text("tools/call echo: a 600 KiB message"), "Echo: "+strings.Repeat("y", 600<<10); got != want {
		t.Errorf("%s: echo of a 600 KiB message came back as %d bytes, want %d", how, len(got), len(want))
	}
	if got := text("tools/call get-sum: numbers"); got != "The sum of 2 and 40.5 is 42.5." {
		t.Errorf("%s: get-sum answered %q", how, got)
	}
	if got := text("tools/call trigger-sampling-request: a sampling request from the server"); !strings.Contains(got, "stub answer to: Resource trigger-sampling-request context: name a colour") {
		t.Errorf("%s: the sampling round trip (server → client → server) lost the client's answer: %q", how, got)
	}
	if len(tr.ServerRequests) != 1 {
		t.Errorf("%s: the client got %d requests from the server, want 1 (sampling/createMessage)", how, len(tr.ServerRequests))
	}
	if r, _ := byName["tools/call no-such-tool: an unknown tool"].Result.(map[string]any); r["isError"] != true {
		t.Errorf("%s: calling an unknown tool gave %v, want an isError result", how, r)
	}
	progress := 0
	for _, m := range tr.Received {
		if mm, _ := m.(map[string]any); mm["method"] == "notifications/progress" {
			progress++
		}
	}
	if progress != 4 {
		t.Errorf("%s: the client received %d progress notifications, want 4 (one per step)", how, progress)
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
