package democli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/internal/cmdutil"
	"github.com/hoist-mcp/hoist/internal/iostreams"
)

func TestNewCmd(t *testing.T) {
	for _, tc := range []struct {
		name        string
		args        []string
		world, http string
		db          string
	}{
		{"defaults", nil, "echo", "", ""},
		{"--world", []string{"--world", "retail"}, "retail", "", ""},
		{"--http", []string{"--http", "127.0.0.1:0"}, "echo", "127.0.0.1:0", ""},
		{"both, with =", []string{"--http=127.0.0.1:8932", "--world=retail"}, "retail", "127.0.0.1:8932", ""},
		{"tau2-retail", []string{"--world", "tau2-retail"}, "tau2-retail", "", ""},
		{"--db", []string{"--world", "tau2-retail", "--db", "retail.json"}, "tau2-retail", "", "retail.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got *options
			cmd := newCmd(&factory{IO: iostreams.Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}},
				func(_ context.Context, o *options) error { got = o; return nil })
			cmd.SetArgs(cmdutil.SingleDashLongFlags(cmd, tc.args))
			if err := cmd.Execute(); err != nil || got == nil {
				t.Fatalf("err %v", err)
			}
			if got.World != tc.world || got.HTTP != tc.http || got.DB != tc.db {
				t.Errorf("world %q, http %q, db %q; want %q, %q and %q", got.World, got.HTTP, got.DB, tc.world, tc.http, tc.db)
			}
		})
	}
}

// TestNewCmdCallsLog: --calls-log names the retail world's journal.
func TestNewCmdCallsLog(t *testing.T) {
	var got *options
	cmd := newCmd(&factory{IO: iostreams.Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}},
		func(_ context.Context, o *options) error { got = o; return nil })
	cmd.SetArgs([]string{"--world", "retail", "--calls-log", "calls.jsonl"})
	if err := cmd.Execute(); err != nil || got == nil {
		t.Fatalf("err %v", err)
	}
	if got.World != "retail" || got.CallsLog != "calls.jsonl" {
		t.Errorf("world %q, calls log %q; want retail and calls.jsonl", got.World, got.CallsLog)
	}
}

func run(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, iostreams.Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

func TestFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string // after "hoist-mcp-demo: "
	}{
		{"no world", []string{"--world"}, "flag needs an argument: --world"},
		{"unknown world", []string{"--world", "shop"}, `--world "shop": want echo, retail or tau2-retail`},
		{"--db of another world", []string{"--world", "retail", "--db", "x.json"}, "--db: only --world tau2-retail reads a database"},
		{"empty --db", []string{"--world", "tau2-retail", "--db="}, "--db: want a file, τ²-bench's db/retail.json"},
		{"--calls-log of another world", []string{"--calls-log", "calls.jsonl"}, "--calls-log: only --world retail journals its calls"},
		{"empty --calls-log", []string{"--world", "retail", "--calls-log="}, "--calls-log: want a file to append the calls to"},
		{"no address", []string{"--http"}, "flag needs an argument: --http"},
		{"empty address", []string{"--http="}, "--http: want an address, such as 127.0.0.1:8932"},
		{"an argument", []string{"retail"}, `unexpected argument "retail": hoist-mcp-demo takes only flags`},
		{"unknown flag", []string{"--worlds", "retail"}, "unknown flag: --worlds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(tc.args...)
			want := "hoist-mcp-demo: " + tc.want + "\nRun 'hoist-mcp-demo --help' for usage.\n"
			if code != 2 || stderr != want || stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, stdout, stderr, want)
			}
		})
	}
}

func TestHelpAndCompletion(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-help"}, {"-h"}} {
		code, stdout, stderr := run(args...)
		if code != 0 || stderr != "" || !strings.Contains(stdout, "Usage:\n  hoist-mcp-demo [--world echo|retail|tau2-retail] [--db FILE] [--http ADDR]") ||
			!strings.Contains(stdout, "find_user_id_by_email") || !strings.Contains(stdout, "--world WORLD") {
			t.Errorf("%q: exit %d, stderr %q, stdout:\n%s", args, code, stderr, stdout)
		}
	}
	for shell, want := range map[string]string{
		"bash":       "__start_hoist-mcp-demo",
		"zsh":        "#compdef hoist-mcp-demo",
		"fish":       "complete -c hoist-mcp-demo",
		"powershell": "Register-ArgumentCompleter -CommandName 'hoist-mcp-demo'",
	} {
		code, stdout, stderr := run("--completion", shell)
		if code != 0 || !strings.Contains(stdout, want) || stderr != "" {
			t.Errorf("--completion %s: exit %d, stderr %q, stdout lacks %q", shell, code, stderr, want)
		}
	}
	code, stdout, _ := run("__complete", "--world", "")
	if code != 0 || !strings.Contains(stdout, "echo\nretail\ntau2-retail\n") {
		t.Errorf("__complete --world '': exit %d, stdout %q", code, stdout)
	}
}
