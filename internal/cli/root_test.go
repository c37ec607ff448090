package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/internal/iostreams"
)

// hoist runs Main in this process.
func hoist(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, iostreams.Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

// TestRootWiresEachCommand: NewRoot adds every command, each in a group of
// hoist --help.
func TestRootWiresEachCommand(t *testing.T) {
	root := NewRoot(&Factory{IO: iostreams.Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}})
	got := map[string][]string{}
	for _, c := range root.Commands() {
		got[c.GroupID] = append(got[c.GroupID], c.Name())
	}
	want := map[string][]string{
		"record":  {"diff", "export", "ingest", "init", "redact", "sessions", "tools"},
		"flows":   {"compile", "flow", "flow-show", "learn", "promote"},
		"measure": {"audit", "confirm", "console", "drift", "evaluate", "guards", "replay"},
		"":        {"completion"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("commands by group (-want +got):\n%s", diff)
	}
	code, stdout, _ := hoist("--help")
	for _, want := range []string{"Recording and the episode store:\n  diff", "Measuring what a flow saves:\n  audit", "completion", "Examples:"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("hoist --help: exit %d, lacks %q", code, want)
		}
	}
}

func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{
		"bash":       "__start_hoist",
		"zsh":        "#compdef hoist",
		"fish":       "complete -c hoist",
		"powershell": "Register-ArgumentCompleter -CommandName 'hoist'",
	} {
		code, stdout, stderr := hoist("completion", shell)
		if code != 0 || !strings.Contains(stdout, want) || stderr != "" {
			t.Errorf("hoist completion %s: exit %d, stderr %q, stdout lacks %q", shell, code, stderr, want)
		}
	}
	// The scripts ask hoist itself; its answer lists the commands.
	code, stdout, _ := hoist("__complete", "")
	for _, want := range []string{"learn\t", "flow-show\t", "completion\t"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("hoist __complete '': exit %d, lacks %q:\n%s", code, want, stdout)
		}
	}
}

// TestFlagErrors: a usage mistake exits 2 with one line naming the flag (or
// argument) and a pointer to the command's --help; nothing is opened.
func TestFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the first line, after "hoist: "
	}{
		{[]string{"learn", "--store", "e.db", "--folds", "0"}, "--folds 0: want 1 to 1000"},
		{[]string{"learn", "--store", "e.db", "--min-support", "x"}, `invalid argument "x" for "--min-support" flag: strconv.ParseInt: parsing "x": invalid syntax`},
		{[]string{"learn", "--store", "e.db", "extra"}, `unknown command "extra" for "hoist learn"`},
		{[]string{"ingest", "--sessions", "logs", "--tools", "k.json"}, "--tools and --tool-schemas go with --tau2"},
		{[]string{"ingest", "--tau2", "r.json"}, "--tau2 needs --store PATH: the store to load the results into"},
		{[]string{"audit", "--store", "e.db", "--flow", "f.json", "--threshold", "2"}, "--threshold 2: want 0 to 1"},
		{[]string{"audit", "--store", "e.db", "--flow", "f.json", "--decider", "oracle"}, `--decider: unknown decider "oracle": want arbiter, reach or habit`},
		{[]string{"evaluate", "--store", "e.db", "--reps", "5"}, "--reps 5: want 100 to 1000000"},
		{[]string{"evaluate", "--store", "e.db", "--no-such-flag"}, "unknown flag: --no-such-flag"},
		{[]string{"init"}, "no server command: put it after --, for example: hoist init --listen 127.0.0.1:8931 -- npx -y some-mcp-server"},
		{[]string{"completion", "tcsh"}, `unknown command "tcsh" for "hoist completion"`},
	} {
		code, stdout, stderr := hoist(tc.args...)
		path := "hoist " + tc.args[0]
		want := "hoist: " + tc.want + "\nRun '" + path + " --help' for usage.\n"
		if code != 2 || stdout != "" || stderr != want {
			t.Errorf("hoist %s: exit %d, stdout %q, stderr %q; want 2 and %q", strings.Join(tc.args, " "), code, stdout, stderr, want)
		}
	}
	code, _, stderr := hoist("lern")
	if code != 2 || !strings.HasPrefix(stderr, "hoist: unknown command \"lern\" for \"hoist\"") || !strings.Contains(stderr, "learn") ||
		!strings.HasSuffix(stderr, "Run 'hoist --help' for usage.\n") {
		t.Errorf("hoist lern: exit %d, stderr %q", code, stderr)
	}
}
