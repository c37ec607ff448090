package cmdutil

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
)

func TestExit(t *testing.T) {
	root := &cobra.Command{Use: "prog"}
	sub := &cobra.Command{Use: "sub"}
	root.AddCommand(sub)
	for _, tc := range []struct {
		name string
		cmd  *cobra.Command
		err  error
		code int
		want string
	}{
		{"nil", sub, nil, 0, ""},
		{"flag error", sub, FlagErrorf("--n %d: want 1 or more", 0), 2, "prog: --n 0: want 1 or more\nRun 'prog sub --help' for usage.\n"},
		{"wrapped flag error", sub, fmt.Errorf("checking: %w", &FlagError{errors.New("bad")}), 2, "prog: checking: bad\nRun 'prog sub --help' for usage.\n"},
		{"cobra's argument error", root, errors.New(`unknown command "x" for "prog"`), 2, "prog: unknown command \"x\" for \"prog\"\nRun 'prog --help' for usage.\n"},
		{"no command known", nil, FlagErrorf("bad"), 2, "prog: bad\nRun 'prog --help' for usage.\n"},
		{"a failure that mentions an invalid argument", sub, errors.New("reading x: invalid argument"), 7, "prog: reading x: invalid argument\n"},
		{"exit code", sub, &ExitError{Code: 3, Err: errors.New("done, but some input was bad")}, 3, "prog: done, but some input was bad\n"},
		{"silent exit code", sub, &ExitError{Code: 137}, 137, ""},
		{"a failure that holds a process's exit status", sub, fmt.Errorf("the server: %w", exec.Command("sh", "-c", "exit 3").Run()), 7, "prog: the server: exit status 3\n"},
		{"failure", sub, errors.New("opening store: no such file"), 7, "prog: opening store: no such file\n"},
		{"joined failures", sub, errors.Join(errors.New("step 3: timeout"), nil, errors.New("the server: exit status 3")), 7, "prog: step 3: timeout\nprog: the server: exit status 3\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w bytes.Buffer
			if code := Exit(&w, "prog", tc.cmd, tc.err, 7); code != tc.code || w.String() != tc.want {
				t.Errorf("exit %d, printed %q; want %d and %q", code, w.String(), tc.code, tc.want)
			}
		})
	}
}

func TestSingleDashLongFlags(t *testing.T) {
	cmd := &cobra.Command{Use: "p"}
	fl := cmd.Flags()
	fl.Duration("think", 0, "")
	fl.Bool("json", false, "")
	fl.StringArray("param", nil, "")
	fl.BoolP("quiet", "q", false, "")
	fl.StringP("out", "o", "", "")
	for _, tc := range []struct {
		args, want []string
	}{
		{[]string{"-think", "0", "-json", "f", "--", "srv", "-think", "1s"}, []string{"--think", "0", "--json", "f", "--", "srv", "-think", "1s"}},
		{[]string{"-think=0", "-param=a=b", "-help"}, []string{"--think=0", "--param=a=b", "--help"}},
		// A value is a value, whatever it looks like.
		{[]string{"-param", "-json", "--param", "-think", "-o", "-json"}, []string{"--param", "-json", "--param", "-think", "-o", "-json"}},
		{[]string{"-qo", "-json", "-ofile", "-json"}, []string{"-qo", "-json", "-ofile", "--json"}},
		// Unknown names, shorthands and positional arguments stay as they are.
		{[]string{"-thinking", "-x", "-q", "-", "-h", "file.jsonl"}, []string{"-thinking", "-x", "-q", "-", "-h", "file.jsonl"}},
	} {
		got := SingleDashLongFlags(cmd, tc.args)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.args, diff)
		}
	}
	// And pflag parses the result as the flag package parsed the original.
	if err := fl.Parse(SingleDashLongFlags(cmd, []string{"-think", "250ms", "-json", "f.jsonl"})); err != nil {
		t.Fatal(err)
	}
	if d, _ := fl.GetDuration("think"); d != 250*time.Millisecond {
		t.Errorf("think %v", d)
	}
	if j, _ := fl.GetBool("json"); !j || fl.NArg() != 1 {
		t.Errorf("json %v, args %q", j, fl.Args())
	}
}
