package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/internal/testbin"
	"github.com/hoist-mcp/hoist/recording"
)

// recordProcedure runs hoist-procedure's procedure with params through the
// built hoist-mcp --record in front of server, and returns the session log
// it wrote.
func recordProcedure(t *testing.T, procedure string, params []string, server ...string) string {
	t.Helper()
	dir := t.TempDir()
	args := []string{"--think", "0"}
	for _, p := range params {
		args = append(args, "--param", p)
	}
	args = append(args, procedure, "--", testbin.Build(t, "hoist-mcp"), "--record", dir, "--")
	cmd := exec.Command(testbin.Build(t, "hoist-procedure"), append(args, server...)...)
	cmd.Env = testbin.Env()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hoist-procedure: %v\n%s", err, out)
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(paths) != 1 {
		t.Fatalf("want one session log in %s, got %q", dir, paths)
	}
	return paths[0]
}

// TestDiffRecordings records scripted customers through the built hoist-mcp
// and compares the recordings with the built hoist: the same procedure
// twice is no difference (exit 0, nothing printed); the same procedure
// against a database where one order's status changed is a difference
// naming that call and the field in its answer (exit 1); another customer
// is a difference in the arguments.
func TestDiffRecordings(t *testing.T) {
	demo := testbin.Build(t, "hoist-mcp-demo")
	db := filepath.Join(testbin.Root(), "testdata", "tau2", "db", "retail.json")
	changed := filepath.Join(t.TempDir(), "retail.json")
	b, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(b, []byte(`"#W8632528": {`))
	status := bytes.Index(b[at:], []byte(`"status": "delivered"`))
	if at < 0 || status < 0 {
		t.Fatal("order #W8632528 is not in the database as the test knows it")
	}
	b = append(append(bytes.Clone(b[:at+status]), `"status": "processed"`...), b[at+status+len(`"status": "delivered"`):]...)
	if err := os.WriteFile(changed, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ethan := []string{"email=ethan.lopez8943@example.com"}
	first := recordProcedure(t, "review-orders", ethan, demo, "--world", "tau2-retail", "--db", db)
	again := recordProcedure(t, "review-orders", ethan, demo, "--world", "tau2-retail", "--db", db)
	moved := recordProcedure(t, "review-orders", ethan, demo, "--world", "tau2-retail", "--db", changed)

	if r := run(t, nil, "diff", first, again); r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Errorf("the same procedure twice: exit %d, stdout %q, stderr %q; want 0 and nothing", r.code, r.stdout, r.stderr)
	}

	r := run(t, nil, "diff", first, moved)
	want := "get_order_details #3 (A " + first + ":"
	if r.code != 1 || !strings.HasPrefix(r.stdout, want) ||
		!strings.Contains(r.stdout, "\n  result.content[0].text.status: \"delivered\" → \"processed\"\n") ||
		!strings.HasSuffix(r.stdout, "1 call differs (A made 7, B 7)\n") || r.stderr != "" {
		t.Errorf("a changed answer: exit %d, stderr %q, stdout:\n%s\nwant exit 1, starting %q", r.code, r.stderr, r.stdout, want)
	}

	if r := run(t, nil, "diff", "--ignore", "get_order_details:result.content[*].text.status", first, moved); r.code != 0 || r.stdout != "" {
		t.Errorf("the changed field ignored: exit %d, stdout:\n%s", r.code, r.stdout)
	}
	if r := run(t, nil, "diff", "--ignore", "cancel_pending_order:result", first, moved); r.code != 1 {
		t.Errorf("another tool's field ignored: exit %d, want 1", r.code)
	}

	r = run(t, nil, "diff", "--json", first, moved)
	var rep recording.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 1 {
		t.Fatalf("--json: exit %d, %v\n%s", r.code, err, r.stdout)
	}
	wantCalls := []recording.CallDiff{{Tool: "get_order_details", N: 3, A: rep.Calls[0].A, B: rep.Calls[0].B,
		Changes: []recording.Change{{Path: "result.content[0].text.status", A: json.RawMessage(`"delivered"`), B: json.RawMessage(`"processed"`)}}}}
	if diff := cmp.Diff(wantCalls, rep.Calls); diff != "" || rep.CallsA != 7 || rep.CallsB != 7 {
		t.Errorf("--json (-want +got):\n%s\n%+v", diff, rep)
	}

	other := recordProcedure(t, "review-orders", []string{"email=c2@example.com"}, demo, "--world", "retail")
	r = run(t, nil, "diff", first, other)
	if r.code != 1 || !strings.Contains(r.stdout, "find_user_id_by_email #1 (A ") ||
		!strings.Contains(r.stdout, `  arguments.email: "ethan.lopez8943@example.com" → "c2@example.com"`) ||
		!strings.Contains(r.stdout, "get_order_details #3 only in A (") {
		t.Errorf("another customer: exit %d, stdout:\n%s", r.code, r.stdout)
	}
}

// TestDiffBadInput: a recording that is not one, or has a bad line, is
// exit 2 naming the file (and line).
func TestDiffBadInput(t *testing.T) {
	bad := filepath.Join(testbin.Root(), "testdata", "sessions", "bad", "20260923T220000.000Z-201.jsonl")
	good := filepath.Join(testbin.Root(), "testdata", "sessions", "support", "20260923T213000.000Z-103.jsonl")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a bad line", []string{"diff", good, bad}, "hoist: " + bad + `:5: t_ms: want milliseconds as an integer, got "soon"` + "\n"},
		{"missing", []string{"diff", filepath.Join(t.TempDir(), "none.jsonl"), good}, "hoist: stat "},
		{"one argument", []string{"diff", good}, "hoist: want two recordings, A and B; got 1 arguments\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, nil, tc.args...)
			if r.code != 2 || r.stdout != "" || !strings.HasPrefix(r.stderr, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", r.code, r.stdout, r.stderr, tc.want)
			}
		})
	}
}
