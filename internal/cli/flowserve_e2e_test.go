package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/internal/testbin"
)

// startServing starts hoist-mcp recording to dir under domain (also the
// server's name) with flags, in front of server.
func startServing(t *testing.T, dir, domain, hostSession string, flags, server []string) *proxy {
	t.Helper()
	args := append([]string{"--record", dir, "--domain", domain, "--server-name", domain}, flags...)
	cmd := exec.Command(testbin.Build(t, "hoist-mcp"), append(append(args, "--"), server...)...)
	cmd.Env = testbin.Env("HOIST_SESSION=" + hostSession)
	return attach(t, cmd)
}

// startRetail starts hoist-mcp in front of the demo's retail world, with
// the conversation in ctxFile (--context).
func startRetail(t *testing.T, dir, ctxFile, hostSession string, flags ...string) *proxy {
	t.Helper()
	return startServing(t, dir, "retail", hostSession, append([]string{"--context", ctxFile}, flags...),
		[]string{testbin.Build(t, "hoist-mcp-demo"), "--world", "retail"})
}

// startFilesystem starts hoist-mcp in front of the real
// @modelcontextprotocol/server-filesystem, serving root.
func startFilesystem(t *testing.T, dir, root, hostSession string, flags ...string) *proxy {
	t.Helper()
	return startServing(t, dir, "files", hostSession, flags, []string{filepath.Join(testbin.Peers(t), ".bin", "mcp-server-filesystem"), root})
}

// say appends a user message to a --context file, as a host does.
func say(t *testing.T, ctxFile, text string) {
	t.Helper()
	f, err := os.OpenFile(ctxFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]string{"role": "user", "content": text})
	if _, err := f.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// appended returns the lookups ("tool {args}") the proxy appended to an
// answer, from the text item it adds.
func appended(t *testing.T, answer string) []string {
	t.Helper()
	var r struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(answer), &r); err != nil {
		t.Fatalf("answer %q: %v", answer, err)
	}
	if len(r.Result.Content) < 2 {
		return nil
	}
	var out []string
	for _, l := range strings.Split(r.Result.Content[1].Text, "\n") {
		if strings.HasSuffix(l, "}:") && strings.Contains(l, " {") {
			out = append(out, strings.TrimSuffix(l, ":"))
		}
	}
	slices.Sort(out)
	return out
}

// bestBinding returns the best binding of tool after site in f, as text,
// or "".
func bestBinding(f *flow.Flow, site, tool string) string {
	for _, s := range f.Sites {
		for _, l := range s.Lookups {
			if s.Tool == site && !s.Failed && l.Tool == tool && len(l.Bindings) > 0 {
				return flow.BindingString(l.Bindings[0].Args)
			}
		}
	}
	return ""
}

// A flow learned from sessions recorded with --context looks up the order
// the customer named, not every order of the customer: after the user's
// details (which list two orders), the one they said, whichever of the two
// it is. Served end to end through the built binaries.
func TestConversationBindingLearnedAndServed(t *testing.T) {
	dir := t.TempDir()
	// Half the customers name their second order, so that neither the
	// first element nor a constant reproduces the agent.
	logs := recordRetail(t, dir, 6)
	learned := filepath.Join(dir, "retail.flow.json")
	mustRun(t, "learn", "-q", "--sessions", logs, "--domain", "retail", "--folds", "1", "--min-support", "2", "-o", learned)
	f, err := flow.Load(learned)
	if err != nil {
		t.Fatal(err)
	}
	if orderBinding := bestBinding(f, "get_user_details", "get_order_details"); !strings.Contains(orderBinding, "said") {
		t.Fatalf("get_order_details after get_user_details is bound by %q, want a binding from the conversation", orderBinding)
	}

	// A new customer names the second of their orders.
	ctx := filepath.Join(dir, "serve.jsonl")
	p := startRetail(t, filepath.Join(dir, "served"), ctx, "serve", "--flow", learned)
	p.start(t)
	say(t, ctx, "Hi! It's c9@example.com, about order #W9b please")
	got := appended(t, p.request(t, 2, "tools/call", `{"name":"find_user_id_by_email","arguments":{"email":"c9@example.com"}}`))
	want := []string{`get_order_details {"order_id":"#W9b"}`, `get_user_details {"user_id":"user_9"}`}
	if !slices.Equal(got, want) {
		t.Errorf("appended after find_user_id_by_email: %q, want exactly %q", got, want)
	}
	p.close(t)
}

// The filesystem server's list-then-read: the agent lists a directory and
// reads the files it lists, whose paths are the directory joined with a
// listed name. hoist learn learns the template, and hoist-mcp serves it in
// front of the real server: after a listing, exactly the listed files are
// read, not the subdirectory.
func TestFilesystemListThenRead(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for n := 1; n <= 5; n++ {
		write(fmt.Sprintf("p%d/notes%d.txt", n, n), fmt.Sprintf("notes of %d", n))
		write(fmt.Sprintf("p%d/todo.md", n), "- nothing")
		write(fmt.Sprintf("p%d/sub/deep.txt", n), "deep")
	}
	// The server names its root by its real path.
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(dir, "rec")
	for n := 1; n <= 4; n++ {
		p := startFilesystem(t, logs, real, fmt.Sprintf("learn-%d", n))
		p.start(t)
		d := filepath.Join(real, fmt.Sprintf("p%d", n))
		p.request(t, 2, "tools/call", fmt.Sprintf(`{"name":"list_directory","arguments":{"path":%q}}`, d))
		p.request(t, 3, "tools/call", fmt.Sprintf(`{"name":"read_text_file","arguments":{"path":%q}}`, filepath.Join(d, fmt.Sprintf("notes%d.txt", n))))
		p.request(t, 4, "tools/call", fmt.Sprintf(`{"name":"read_text_file","arguments":{"path":%q}}`, filepath.Join(d, "todo.md")))
		p.close(t)
	}
	learned := filepath.Join(dir, "files.flow.json")
	mustRun(t, "learn", "-q", "--sessions", logs, "--domain", "files", "--folds", "1", "--min-support", "2", "-o", learned)
	f, err := flow.Load(learned)
	if err != nil {
		t.Fatal(err)
	}
	got := bestBinding(f, "list_directory", "read_text_file")
	if want := `path=$args.path + "/" + $lines["[FILE] *"][*]`; got != want {
		t.Fatalf("read_text_file after list_directory is bound by %q, want %q", got, want)
	}

	p := startFilesystem(t, filepath.Join(dir, "served"), real, "serve", "--flow", learned)
	p.start(t)
	d := filepath.Join(real, "p5")
	looked := appended(t, p.request(t, 2, "tools/call", fmt.Sprintf(`{"name":"list_directory","arguments":{"path":%q}}`, d)))
	want := []string{
		fmt.Sprintf(`read_text_file {"path":%q}`, filepath.Join(d, "notes5.txt")),
		fmt.Sprintf(`read_text_file {"path":%q}`, filepath.Join(d, "todo.md")),
	}
	slices.Sort(want)
	if !slices.Equal(looked, want) {
		t.Errorf("appended after list_directory: %q, want exactly %q", looked, want)
	}
	if strings.Contains(strings.Join(looked, "\n"), "sub") {
		t.Errorf("a subdirectory was read as a file: %q", looked)
	}
	p.close(t)
}
