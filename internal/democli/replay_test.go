package democli

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/internal/testbin"
)

// runBin runs a built program and returns its stdout; it fails the test on
// a non-zero exit.
func runBin(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = testbin.Env()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %q: %v\n%s%s", filepath.Base(name), args, err, out.String(), errb.String())
	}
	return out.String()
}

// oneLog returns the one session log in dir.
func oneLog(t *testing.T, dir string) string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(paths) != 1 {
		t.Fatalf("want one session log in %s, got %q", dir, paths)
	}
	return paths[0]
}

// sdkRun is what testdata/sdkclient.mjs printed.
type sdkRun struct {
	Server json.RawMessage   `json:"server"`
	Tools  json.RawMessage   `json:"tools"`
	Calls  []json.RawMessage `json:"calls"`
}

func sdkClient(t *testing.T, calls string, command ...string) sdkRun {
	t.Helper()
	peers := testbin.Peers(t)
	out := runBin(t, "node", append([]string{filepath.Join("testdata", "sdkclient.mjs"), peers, calls}, command...)...)
	var r sdkRun
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("the client printed %s: %v", out, err)
	}
	return r
}

// TestReplaySDKClient records the TypeScript SDK client's session with the
// retail world through the built hoist-mcp, then runs the same client
// against hoist-mcp-demo --replay of that log: it sees the same server, the
// same tools and the same results, the order read before and after its
// cancellation included. A call the recording lacks gets a tool error
// naming the nearest recorded call.
func TestReplaySDKClient(t *testing.T) {
	demo, proxy := testbin.Build(t, "hoist-mcp-demo"), testbin.Build(t, "hoist-mcp")
	dir := t.TempDir()
	calls := `[
		{"name": "find_user_id_by_email", "arguments": {"email": "c3@example.com"}},
		{"name": "get_order_details", "arguments": {"order_id": "#W3a"}},
		{"name": "cancel_pending_order", "arguments": {"order_id": "#W3a", "reason": "no longer needed"}},
		{"name": "get_order_details", "arguments": {"order_id": "#W3a"}}
	]`
	live := sdkClient(t, calls, proxy, "--record", dir, "--", demo, "--world", "retail")
	log := oneLog(t, dir)
	replayed := sdkClient(t, calls, demo, "--replay", log)
	if diff := cmp.Diff(live, replayed); diff != "" {
		t.Errorf("replayed (-live +replayed):\n%s", diff)
	}
	if len(live.Calls) != 4 || !strings.Contains(string(live.Calls[1]), `\"status\": \"pending\"`) || !strings.Contains(string(live.Calls[3]), `\"status\": \"cancelled\"`) {
		t.Fatalf("the live calls: %s", live.Calls)
	}

	// Another customer's order was never recorded.
	other := sdkClient(t, `[{"name": "get_order_details", "arguments": {"order_id": "#W4a"}}]`, demo, "--replay", log)
	var res struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	json.Unmarshal(other.Calls[0], &res)
	want := `no recorded call of get_order_details with arguments {"order_id":"#W4a"}; the nearest recorded call is get_order_details {"order_id":"#W3a"} (` + log + `:`
	if !res.IsError || len(res.Content) != 1 || !strings.HasPrefix(res.Content[0].Text, want) || !strings.HasSuffix(res.Content[0].Text, "), which differs in order_id") {
		t.Errorf("an unrecorded call got %s; want a tool error starting %s", other.Calls[0], want)
	}
}

// TestReplayProcedure: hoist-procedure's run against the replay of its own
// recorded run reports exactly what its run against the live world did.
func TestReplayProcedure(t *testing.T) {
	demo, proxy, proc := testbin.Build(t, "hoist-mcp-demo"), testbin.Build(t, "hoist-mcp"), testbin.Build(t, "hoist-procedure")
	dir := t.TempDir()
	args := []string{"--think", "0", "--json", "--param", "email=c7@example.com", "cancel-order", "--"}
	live := runBin(t, proc, append(args, proxy, "--record", dir, "--", demo, "--world", "retail")...)
	replayed := runBin(t, proc, append(args, demo, "--replay", oneLog(t, dir))...)
	if diff := cmp.Diff(live, replayed); diff != "" {
		t.Errorf("the report against the replay (-live +replayed):\n%s", diff)
	}
	if !strings.Contains(live, `"cancel_pending_order"`) || !strings.Contains(live, `\"status\": \"cancelled\"`) {
		t.Errorf("the live run did not cancel:\n%s", live)
	}
}

func TestNewCmdReplay(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"one", []string{"--replay", "a.jsonl"}, []string{"a.jsonl"}},
		{"several after it", []string{"--replay", "a.jsonl", "b.jsonl.zst", "logs"}, []string{"a.jsonl", "b.jsonl.zst", "logs"}},
		{"repeated", []string{"--replay", "a.jsonl", "--replay=b.jsonl"}, []string{"a.jsonl", "b.jsonl"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got *options
			cmd := newCmd(&factory{IO: iostreams.Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}},
				func(_ context.Context, o *options) error { got = o; return nil })
			cmd.SetArgs(tc.args)
			if err := cmd.Execute(); err != nil || got == nil {
				t.Fatalf("err %v", err)
			}
			if diff := cmp.Diff(tc.want, got.Replay); diff != "" {
				t.Errorf("logs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReplayErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string // after "hoist-mcp-demo: "
	}{
		{"with a world", []string{"--world", "retail", "--replay", "a.jsonl"}, "--replay serves the recordings, not a world: leave out --world\nRun 'hoist-mcp-demo --help' for usage.\n"},
		{"with --http", []string{"--http", "127.0.0.1:0", "--replay", "a.jsonl"}, "--replay serves on stdio only: leave out --http\nRun 'hoist-mcp-demo --help' for usage.\n"},
		{"a bad line", []string{"--replay", filepath.Join(testbin.Root(), "testdata", "sessions", "bad", "20260923T220000.000Z-201.jsonl")},
			"--replay: " + filepath.Join(testbin.Root(), "testdata", "sessions", "bad", "20260923T220000.000Z-201.jsonl") + `:5: t_ms: want milliseconds as an integer, got "soon"` + "\n"},
		{"not a session log", []string{"--replay", filepath.Join(testbin.Root(), "testdata", "sessions", "bad", "notes.jsonl")}, "--replay: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(tc.args...)
			if code != 2 || stdout != "" || !strings.HasPrefix(stderr, "hoist-mcp-demo: "+tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, stdout, stderr, tc.want)
			}
		})
	}
}
