package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/internal/iostreams"
)

func TestNewCmdTools(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		pin     bool
		logs    string // opts.logs(), joined
		server  string
		json    bool
		out     string
		wantErr string
	}{
		{name: "logs", args: []string{"a.jsonl", "dir"}, logs: "a.jsonl dir"},
		{name: "--sessions", args: []string{"--sessions", "logs", "--server", "weather", "--json"}, logs: "logs", server: "weather", json: true},
		{name: "pin", args: []string{"pin", "--out", "p.json", "--sessions", "logs", "x.jsonl"}, pin: true, logs: "x.jsonl logs", out: "p.json"},
		{name: "nothing to read", args: nil, wantErr: "name session logs or directories, or --sessions DIR"},
		{name: "pin without --out", args: []string{"pin", "logs"}, wantErr: "--out: want the pin file to write"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got *toolsOptions
			var pinned bool
			f := &Factory{IO: iostreams.Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}}
			cmd := newCmdTools(f,
				func(_ context.Context, o *toolsOptions) error { got = o; return nil },
				func(_ context.Context, o *toolsOptions) error { got, pinned = o, true; return nil })
			cmd.SetArgs(tc.args)
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			err := cmd.Execute()
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Errorf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got == nil {
				t.Fatalf("err %v", err)
			}
			if strings.Join(got.logs(), " ") != tc.logs || got.Server != tc.server || got.JSON != tc.json || got.Out != tc.out || pinned != tc.pin {
				t.Errorf("options %+v (logs %q), pin %v", got, got.logs(), pinned)
			}
		})
	}
}
