package proccli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hoist-mcp/hoist/internal/cmdutil"
	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/procedure"
)

func TestNewCmd(t *testing.T) {
	defaults := func(o options) options {
		if o.Timeout == 0 {
			o.Timeout = procedure.DefaultCallTimeout
		}
		if o.StopGrace == 0 {
			o.StopGrace = DefaultStopGrace
		}
		if o.Params == nil {
			o.Params = map[string]string{}
		}
		return o
	}
	for _, tc := range []struct {
		name string
		args []string
		want options
	}{
		{"flags first", []string{"--think", "0", "--json", "--param", "email=a@b", "f.jsonl", "--", "srv", "--think", "1s"},
			defaults(options{File: "f.jsonl", Command: []string{"srv", "--think", "1s"}, Params: map[string]string{"email": "a@b"}, Think: 0, JSON: true})},
		{"the old single-dash flags", []string{"-think", "0", "-json", "-param", "email=a@b", "-timeout=2s", "-stop-grace", "1s", "f.jsonl", "--", "srv", "-think", "1s"},
			options{File: "f.jsonl", Command: []string{"srv", "-think", "1s"}, Params: map[string]string{"email": "a@b"}, Think: 0, JSON: true, Timeout: 2 * time.Second, StopGrace: time.Second}},
		{"flags after the file", []string{"f.jsonl", "--param", "a=1", "--param", "b=x=y", "--think", "250ms", "--", "srv"},
			defaults(options{File: "f.jsonl", Command: []string{"srv"}, Params: map[string]string{"a": "1", "b": "x=y"}, Think: 250 * time.Millisecond})},
		{"defaults: the file's think time", []string{"f.jsonl", "--", "srv", "--", "child"},
			defaults(options{File: "f.jsonl", Command: []string{"srv", "--", "child"}, Think: -1})},
		{"a value that looks like a flag", []string{"-param", "-json=1", "f.jsonl", "--", "srv"},
			defaults(options{File: "f.jsonl", Command: []string{"srv"}, Params: map[string]string{"-json": "1"}, Think: -1})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got *options
			cmd := newCmd(&factory{IO: iostreams.Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}},
				func(_ context.Context, o *options) error { got = o; return nil })
			cmd.SetArgs(cmdutil.SingleDashLongFlags(cmd, tc.args))
			if err := cmd.Execute(); err != nil || got == nil {
				t.Fatalf("err %v", err)
			}
			if diff := cmp.Diff(tc.want, *got, cmpopts.IgnoreUnexported(options{}), cmpopts.IgnoreFields(options{}, "IO")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
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
		want string // after "hoist-procedure: "
	}{
		{"no file", []string{"--", "srv"}, "no procedure file: hoist-procedure [flags] FILE -- SERVER_COMMAND [ARGS...]"},
		{"two files", []string{"a", "b", "--", "srv"}, `one procedure file, got ["a" "b"]; put the server command after --`},
		{"no server", []string{"f.jsonl"}, "no server command: put it after --, such as -- hoist-mcp-demo --world retail"},
		{"bad param", []string{"--param", "email", "f", "--", "s"}, `--param "email": want NAME=VALUE`},
		{"zero timeout", []string{"--timeout", "0", "f", "--", "s"}, "--timeout: must be more than 0"},
		{"negative stop grace", []string{"-stop-grace", "-1s", "f", "--", "s"}, "--stop-grace: must be more than 0"},
		{"bad duration", []string{"--think", "soon", "f", "--", "s"}, `invalid argument "soon" for "--think" flag: time: invalid duration "soon"`},
		{"unknown long flag", []string{"--thinking", "0", "f", "--", "s"}, "unknown flag: --thinking"},
		{"unknown single-dash flag", []string{"-thinking", "0", "f", "--", "s"}, "unknown shorthand flag: 't' in -thinking"},
		{"unknown shorthand", []string{"-x", "f", "--", "s"}, "unknown shorthand flag: 'x' in -x"},
		{"unknown shell", []string{"--completion", "sh"}, `--completion "sh": want bash, zsh, fish, powershell`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(tc.args...)
			want := "hoist-procedure: " + tc.want + "\nRun 'hoist-procedure --help' for usage.\n"
			if code != 2 || stderr != want || stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, stdout, stderr, want)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-help"}, {"-h"}} {
		code, stdout, stderr := run(args...)
		if code != 0 || stderr != "" {
			t.Errorf("%q: exit %d, stderr %q", args, code, stderr)
		}
		for _, want := range []string{"Usage:\n  hoist-procedure [flags] FILE -- SERVER_COMMAND [ARGS...]", "--think TIME", "Examples:", "docs/procedure.md"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("%q lacks %q", args, want)
			}
		}
		if strings.Contains(stdout, "-1ns") {
			t.Errorf("%q offers -1ns as --think's default", args)
		}
	}
}

func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{
		"bash":       "__start_hoist-procedure",
		"zsh":        "#compdef hoist-procedure",
		"fish":       "complete -c hoist-procedure",
		"powershell": "Register-ArgumentCompleter -CommandName 'hoist-procedure'",
	} {
		code, stdout, stderr := run("--completion", shell)
		if code != 0 || !strings.Contains(stdout, want) || stderr != "" {
			t.Errorf("--completion %s: exit %d, stderr %q, stdout lacks %q", shell, code, stderr, want)
		}
	}
}
