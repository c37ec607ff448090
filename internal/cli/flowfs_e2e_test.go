package cli_test

import (
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

// startFilesystem starts hoist-mcp in front of the real
// @modelcontextprotocol/server-filesystem, serving root.
func startFilesystem(t *testing.T, dir, root, hostSession string, flags ...string) *proxy {
	t.Helper()
	server := filepath.Join(testbin.Peers(t), ".bin", "mcp-server-filesystem")
	args := append([]string{"--record", dir, "--domain", "files", "--server-name", "files"}, flags...)
	cmd := exec.Command(testbin.Build(t, "hoist-mcp"), append(args, "--", server, root)...)
	cmd.Env = testbin.Env("HOIST_SESSION=" + hostSession)
	return attach(t, cmd)
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
	var got string
	for _, s := range f.Sites {
		for _, l := range s.Lookups {
			if s.Tool == "list_directory" && !s.Failed && l.Tool == "read_text_file" && len(l.Bindings) > 0 {
				got = flow.BindingString(l.Bindings[0].Args)
			}
		}
	}
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
