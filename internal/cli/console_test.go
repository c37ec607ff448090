package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hoist console's flags: one source, a loopback address unless a token
// is given, and the token read from its file.
func TestConsoleFlags(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("s3cret\n"), 0o600)
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	cases := []struct {
		args    []string
		wantErr string
		check   func(t *testing.T, o *consoleOptions)
	}{
		{args: []string{"--sessions", "logs"}, check: func(t *testing.T, o *consoleOptions) {
			if o.Addr != DefaultConsoleAddr || o.Sessions != "logs" || o.token != "" {
				t.Errorf("options %+v", o)
			}
		}},
		{args: []string{"--store", "e.db", "--flow", "a.json", "--flow", "b.json", "--threshold", "0.5"}, check: func(t *testing.T, o *consoleOptions) {
			if len(o.Flows) != 2 || o.rule(nil).Threshold != 0.5 {
				t.Errorf("flows %v, rule %+v", o.Flows, o.rule(nil))
			}
		}},
		{args: []string{"--sessions", "logs", "--addr", "0.0.0.0:8940", "--token-file", tok}, check: func(t *testing.T, o *consoleOptions) {
			if o.token != "s3cret" {
				t.Errorf("token %q, want the file's, trimmed", o.token)
			}
		}},
		{args: nil, wantErr: "name the sessions with --sessions DIR, or a store with --store PATH"},
		{args: []string{"--sessions", "logs", "--store", "e.db"}, wantErr: "--sessions and --store: give one"},
		{args: []string{"--sessions", "logs", "--addr", "0.0.0.0:8940"}, wantErr: "without --token-file the console serves only loopback addresses"},
		{args: []string{"--sessions", "logs", "--addr", "8940"}, wantErr: `--addr "8940": want host:port`},
		{args: []string{"--sessions", "logs", "--token-file", empty}, wantErr: "the file is empty"},
		{args: []string{"--sessions", "logs", "--decider", "oracle"}, wantErr: "--decider"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var got *consoleOptions
			cmd := newCmdConsole(&Factory{}, func(_ context.Context, o *consoleOptions) error { got = o; return nil })
			cmd.SetArgs(c.args)
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			err := cmd.Execute()
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, got)
		})
	}
}
