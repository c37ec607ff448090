package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/flow"
)

// A flow whose lookup is bound by a template ($args.path + "/" +
// $lines[...][0]: the agent lists a folder of the real filesystem server
// and reads the first file listed) has no drift against later sessions
// where the binding still matches, as hoist audit scores it, even when each
// folder listed holds one file: a listing of one line is still lines.
func TestDriftTemplateBindingStillMatching(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	// p1 to p6 hold two files each, q1 to q6 one.
	for n := 1; n <= 6; n++ {
		for _, name := range []string{fmt.Sprintf("p%d/a%d.txt", n, n), fmt.Sprintf("p%d/b.md", n), fmt.Sprintf("q%d/a%d.txt", n, n)} {
			p := filepath.Join(root, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("text of "+name), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	record := func(logs, folder string) {
		t.Helper()
		for n := 1; n <= 6; n++ {
			p := startFilesystem(t, logs, real, fmt.Sprintf("%s-%d", folder, n))
			p.start(t)
			d := filepath.Join(real, fmt.Sprintf("%s%d", folder, n))
			p.request(t, 2, "tools/call", fmt.Sprintf(`{"name":"list_directory","arguments":{"path":%q}}`, d))
			p.request(t, 3, "tools/call", fmt.Sprintf(`{"name":"read_text_file","arguments":{"path":%q}}`, filepath.Join(d, fmt.Sprintf("a%d.txt", n))))
			p.close(t)
		}
	}
	logs, later := filepath.Join(dir, "rec"), filepath.Join(dir, "later")
	record(logs, "p")
	record(later, "q")
	store := filepath.Join(dir, "hoist.db")
	learned := filepath.Join(dir, "files.flow.json")
	mustRun(t, "learn", "-q", "--sessions", logs, "--store", store, "--domain", "files", "-o", learned)
	f, err := flow.Load(learned)
	if err != nil {
		t.Fatal(err)
	}
	got := bestBinding(f, "list_directory", "read_text_file")
	if want := `path=$args.path + "/" + $lines["[FILE] *"][0]`; got != want {
		t.Fatalf("read_text_file after list_directory is bound by %q, want %q", got, want)
	}

	store2 := filepath.Join(dir, "later.db")
	a := mustRun(t, "audit", "--flow", learned, "--sessions", later, "--store", store2, "--json")
	if !strings.Contains(a.stdout, `"hits": 6`) {
		t.Fatalf("audit of the later sessions does not score 6 hits:\n%s", a.stdout)
	}

	r := run(t, nil, "drift", "--flow", learned, "--sessions", later, "--store", store2)
	if r.code != 0 || !strings.Contains(r.stdout, "no drift") {
		t.Fatalf("drift against sessions where the binding still matches: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
}
