package cli

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/audit"
	"github.com/hoist-mcp/hoist/evaluate"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/internal/oraclecli"
	"github.com/hoist-mcp/hoist/learn"
	"github.com/hoist-mcp/hoist/oracle/client"
)

// parseCmd runs the command newCmd makes with args and a runF that
// captures its options, as cli/cli's tests do: the flags are checked, and
// nothing runs.
func parseCmd[T any](t *testing.T, newCmd func(*Factory, func(context.Context, *T) error) *cobra.Command, args ...string) *T {
	t.Helper()
	f := &Factory{IO: iostreams.Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}}
	var got *T
	cmd := newCmd(f, func(_ context.Context, o *T) error { got = o; return nil })
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if _, err := cmd.ExecuteC(); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	if got == nil {
		t.Fatalf("%q: runF was not called", args)
	}
	return got
}

// optionsCmp compares options structs: every field, the unexported ones that
// hold parsed values included, but not the streams.
var optionsCmp = []cmp.Option{
	cmp.AllowUnexported(learnOptions{}, ingestOptions{}, auditOptions{}, ruleOptions{}, evaluateOptions{}, initOptions{}),
	cmpopts.IgnoreFields(learnOptions{}, "IO"),
	cmpopts.IgnoreFields(ingestOptions{}, "IO"),
	cmpopts.IgnoreFields(auditOptions{}, "IO"),
	cmpopts.IgnoreFields(evaluateOptions{}, "IO"),
	cmpopts.IgnoreFields(initOptions{}, "f"),
}

func TestNewCmdLearn(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want learnOptions
	}{
		{"every flag", []string{"--sessions", "logs", "--domain", "retail", "--out", "retail.flow.json", "--habit-only", "--folds", "10", "--min-support", "5", "-q"},
			learnOptions{storeOptions: storeOptions{Sessions: "logs", Quiet: true},
				learnFlags: learnFlags{Domain: "retail", Out: "retail.flow.json", HabitOnly: true, Folds: 10, MinSupport: 5}, Oracle: jevFlags}},
		{"defaults", []string{"--store", "episodes.db"},
			learnOptions{storeOptions: storeOptions{Store: "episodes.db"},
				learnFlags: learnFlags{Out: "-", Folds: learn.DefaultFolds, MinSupport: learn.DefaultMinSupport}, Oracle: jevFlags}},
		{"-o", []string{"--store", "episodes.db", "-o", "f.json", "--folds", "1"},
			learnOptions{storeOptions: storeOptions{Store: "episodes.db"},
				learnFlags: learnFlags{Out: "f.json", Folds: 1, MinSupport: learn.DefaultMinSupport}, Oracle: jevFlags}},
		{"--oracle", []string{"--store", "episodes.db", "--oracle", "replay", "--oracle-model", "jev-1", "--oracle-cache", "cache"},
			learnOptions{storeOptions: storeOptions{Store: "episodes.db"},
				learnFlags: learnFlags{Out: "-", Folds: learn.DefaultFolds, MinSupport: learn.DefaultMinSupport},
				Oracle:     oraclecli.Flags{Mode: "replay", Model: "jev-1", Cache: "cache"}, UseOracle: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseCmd(t, newCmdLearn, tc.args...)
			if diff := cmp.Diff(tc.want, *got, optionsCmp...); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// jevFlags are the oracle's flags as given none.
var jevFlags = oraclecli.Flags{Mode: string(client.DefaultMode)}

// The oracle's flags need --oracle, and --oracle needs an arbiter to fit.
func TestLearnOracleFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--store", "e.db", "--oracle-cache", "c"}, "--oracle-cache: needs --oracle"},
		{[]string{"--store", "e.db", "--oracle-model", "m"}, "--oracle-model: needs --oracle"},
		{[]string{"--store", "e.db", "--oracle", "mock", "--habit-only"}, "--oracle: its answers are fitted in the arbiter, which --habit-only and --shard leave out"},
		{[]string{"--store", "e.db", "--oracle", "mock", "--shard"}, "--oracle: its answers are fitted in the arbiter"},
		{[]string{"--store", "e.db", "--oracle", "gpt"}, `--oracle: unknown oracle "gpt": want jev, replay or mock`},
	} {
		f := &Factory{IO: iostreams.Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}}
		cmd := newCmdLearn(f, func(context.Context, *learnOptions) error { return nil })
		cmd.SetArgs(tc.args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		_, err := cmd.ExecuteC()
		var fe *FlagError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want a flag error %q", tc.args, err, tc.want)
		}
	}
}

func TestNewCmdIngest(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want ingestOptions
	}{
		{"sessions", []string{"--sessions", "logs"}, ingestOptions{storeOptions: storeOptions{Sessions: "logs"}}},
		{"tau2, with more files as arguments", []string{"--store", "e.db", "--tau2", "a.json", "b.json", "c.json", "--tools", "kinds.json", "--tool-schemas", "tools.json", "-q"},
			ingestOptions{storeOptions: storeOptions{Store: "e.db", Quiet: true}, Tau2: []string{"a.json", "b.json", "c.json"}, Tools: "kinds.json", ToolSchemas: "tools.json"}},
		{"tau2 repeated", []string{"--tau2", "a.json", "--store", "e.db", "--tau2", "b.json"},
			ingestOptions{storeOptions: storeOptions{Store: "e.db"}, Tau2: []string{"a.json", "b.json"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseCmd(t, newCmdIngest, tc.args...)
			if diff := cmp.Diff(tc.want, *got, optionsCmp...); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewCmdAudit(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want auditOptions
	}{
		{"every flag", []string{"--flow", "f.json", "--sessions", "logs", "--domain", "retail", "--threshold", "0.5", "--decider", "habit",
			"--per-call", "2", "--per-session", "9", "--json", "--html", "audit.html", "--resamples", "50", "--seed", "7"},
			auditOptions{storeOptions: storeOptions{Sessions: "logs"}, Flow: "f.json", Domain: "retail", ruleOptions: ruleOptions{Threshold: 0.5, Decider: "habit", PerCall: 2, PerSession: 9, MaxBytes: flow.DefaultMaxBytes, decider: flow.Habit},
				JSON: true, HTML: "audit.html", Resamples: 50, Seed: 7}},
		{"defaults: the proxy's", []string{"--flow", "f.json", "--store", "e.db"},
			auditOptions{storeOptions: storeOptions{Store: "e.db"}, Flow: "f.json", ruleOptions: ruleOptions{Threshold: flow.DefaultThreshold, PerCall: flow.DefaultCaps.PerCall, PerSession: flow.DefaultCaps.PerSession, MaxBytes: flow.DefaultMaxBytes},
				Resamples: audit.DefaultResamples, Seed: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseCmd(t, newCmdAudit, tc.args...)
			if diff := cmp.Diff(tc.want, *got, optionsCmp...); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewCmdEvaluate(t *testing.T) {
	target := func(s string) evaluate.Target {
		tg, err := evaluate.ParseTarget(s)
		if err != nil {
			t.Fatal(err)
		}
		return tg
	}
	for _, tc := range []struct {
		name string
		args []string
		want evaluateOptions
	}{
		{"every flag", []string{"--sessions", "logs", "--domain", "retail", "--rule", "reach:0.5", "--rule", "never", "--rule", "habit:0.3:0.1",
			"--detour-cost", "0.5", "--clip", "10", "--level", "0.9", "--reps", "500", "--seed", "3", "--json"},
			evaluateOptions{storeOptions: storeOptions{Sessions: "logs"}, Domain: "retail", Rules: []string{"reach:0.5", "never", "habit:0.3:0.1"},
				DetourCost: 0.5, Clip: 10, Level: 0.9, Reps: 500, Seed: 3, JSON: true,
				targets: []evaluate.Target{target("reach:0.5"), evaluate.Never, target("habit:0.3:0.1")}}},
		{"defaults", []string{"--store", "e.db"},
			evaluateOptions{storeOptions: storeOptions{Store: "e.db"}, DetourCost: evaluate.DefaultDetourCost, Clip: evaluate.DefaultClip,
				Level: evaluate.DefaultLevel, Reps: evaluate.DefaultReps, Seed: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseCmd(t, newCmdEvaluate, tc.args...)
			if diff := cmp.Diff(tc.want, *got, optionsCmp...); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if got := target("habit:0.3:0.1").Rule; got != (flow.Rule{Decider: flow.Habit, Threshold: 0.3, Epsilon: 0.1}) {
		t.Errorf("habit:0.3:0.1 is %+v", got) // so the table above compares parsed rules, not two zero values
	}
}

func TestNewCmdInit(t *testing.T) {
	got := parseCmd(t, newCmdInit, "--listen", "127.0.0.1:8931", "--domain", "orders", "--json", "--", "npx", "-y", "some-mcp-server", "--port", "1")
	want := initOptions{listen: "127.0.0.1:8931", record: "~/.hoist/logs", domain: "orders", name: "orders", json: true,
		command: []string{"npx", "-y", "some-mcp-server", "--port", "1"}}
	if diff := cmp.Diff(want, *got, optionsCmp...); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
