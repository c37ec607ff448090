package cli

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/procedure"
)

func TestNewCmdReplay(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want replayOptions
	}{
		{"every flag", []string{"--flow", "f.json", "--sessions", "logs", "--domain", "retail", "--proxy", "bin/hoist-mcp", "--out", "out",
			"--parallel", "3", "--time-scale", "0.25", "--threshold", "0.5", "--decider", "habit", "--per-call", "2", "--per-session", "9",
			"--timeout", "5s", "--json", "--", "hoist-mcp-demo", "--world", "tau2-retail"},
			replayOptions{storeOptions: storeOptions{Sessions: "logs"}, Flow: "f.json", Domain: "retail", Proxy: "bin/hoist-mcp", Out: "out",
				Parallel: 3, TimeScale: 0.25, ruleOptions: ruleOptions{Threshold: 0.5, Decider: "habit", PerCall: 2, PerSession: 9, MaxBytes: flow.DefaultMaxBytes, decider: flow.Habit}, Timeout: 5 * time.Second, JSON: true,
				World: []string{"hoist-mcp-demo", "--world", "tau2-retail"}}},
		{"defaults: the proxy's and as recorded", []string{"--flow", "f.json", "--tau2", "a.json,b.json", "--tools", "kinds.json", "--", "world"},
			replayOptions{Tau2: []string{"a.json", "b.json"}, Tools: "kinds.json", Flow: "f.json", Parallel: DefaultReplayParallel, TimeScale: 1,
				ruleOptions: ruleOptions{Threshold: flow.DefaultThreshold, PerCall: flow.DefaultCaps.PerCall, PerSession: flow.DefaultCaps.PerSession, MaxBytes: flow.DefaultMaxBytes}, Timeout: procedure.DefaultCallTimeout, World: []string{"world"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseCmd(t, newCmdReplay, tc.args...)
			if diff := cmp.Diff(tc.want, *got, cmp.AllowUnexported(replayOptions{}, ruleOptions{}), cmpopts.IgnoreFields(replayOptions{}, "IO")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestReplayFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no world", []string{"--flow", "f", "--store", "e.db"}, "no world: put its command after --, such as -- hoist-mcp-demo --world tau2-retail"},
		{"an argument", []string{"--flow", "f", "--store", "e.db", "x", "--", "w"}, `unexpected argument "x": put the world's command after --`},
		{"no flow", []string{"--store", "e.db", "--", "w"}, "--flow: name the flow to serve"},
		{"no episodes", []string{"--flow", "f", "--", "w"}, "name the store with --store PATH, or the logs with --sessions DIR (the store is then DIR/hoist.db)"},
		{"two sources", []string{"--flow", "f", "--store", "e.db", "--tau2", "r.json", "--", "w"}, "--tau2: not with --store or --sessions; name one source of episodes"},
		{"tools without tau2", []string{"--flow", "f", "--store", "e.db", "--tools", "k.json", "--", "w"}, "--tools: only with --tau2"},
		{"no parallel", []string{"--flow", "f", "--store", "e.db", "--parallel", "0", "--", "w"}, "--parallel 0: want at least 1"},
		{"negative time scale", []string{"--flow", "f", "--store", "e.db", "--time-scale", "-2", "--", "w"}, "--time-scale -2: want 0 or more"},
		{"bad decider", []string{"--flow", "f", "--store", "e.db", "--decider", "coin", "--", "w"}, `--decider: unknown decider "coin": want arbiter, reach or habit`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &Factory{IO: iostreams.Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}}
			cmd := newCmdReplay(f, nil)
			cmd.SetArgs(tc.args)
			cmd.SetOut(f.IO.Out)
			cmd.SetErr(f.IO.Err)
			_, err := cmd.ExecuteC()
			var fe *FlagError
			if !errors.As(err, &fe) || err.Error() != tc.want {
				t.Errorf("got %v, want the flag error %q", err, tc.want)
			}
		})
	}
}
