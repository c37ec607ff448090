package mcpcli

import (
	"context"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/judge"
)

func TestJudgeFlagErrors(t *testing.T) {
	g := []string{"--domain", "retail", "--guards", "--context", "chat.jsonl"}
	with := func(extra ...string) []string { return append(append(append([]string{}, g...), extra...), "--", "srv") }
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"judge without guards", []string{"--context", "c", "--confirm-judge", "log", "--", "srv"}, "--confirm-judge: needs --guards: the judge checks the writes the guards' confirmation rules check"},
		{"judge without context", []string{"--domain", "retail", "--guards", "--confirm-judge", "log", "--", "srv"}, "--confirm-judge: needs --context: the judge reads the customer's reply in the conversation"},
		{"unknown mode", with("--confirm-judge", "strict"), `--confirm-judge: unknown mode "strict": want log or enforce`},
		{"a judge flag without the judge", with("--confirm-threshold", "0.7"), "--confirm-threshold: needs --confirm-judge"},
		{"an oracle flag without a user", []string{"--oracle", "mock", "--", "srv"}, "--oracle: needs --confirm-judge or --flow"},
		{"unknown oracle", with("--confirm-judge", "log", "--oracle", "gpt"), `--oracle: unknown oracle "gpt": want jev, replay or mock`},
		{"threshold", with("--confirm-judge", "enforce", "--confirm-threshold", "0"), "--confirm-threshold 0: want a probability above 0, at most 1"},
		{"second question", with("--confirm-judge", "enforce", "--confirm-second", "both"), `--confirm-second: unknown second question "both": want proposed or described`},
		{"shadow without a second", with("--confirm-judge", "enforce", "--confirm-second-shadow"), "--confirm-second-shadow: needs --confirm-second proposed or described"},
		{"threshold NaN", with("--confirm-judge", "enforce", "--confirm-threshold", "NaN"), "--confirm-threshold NaN: want a probability above 0, at most 1"},
		{"the rule off", with("--confirm-judge", "log", "--guard", "retail.confirmed=off"), "--confirm-judge: --guard retail.confirmed=off turns off the rule whose writes the judge checks"},
		{"negative budget", with("--confirm-judge", "enforce", "--confirm-questions", "-1"), "--confirm-questions -1: want 0 or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := run(t, tc.args...)
			first, _, _ := strings.Cut(stderr, "\n")
			if code != 2 || first != "hoist-mcp: "+tc.want {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.want)
			}
		})
	}
}

func TestJudgeOptions(t *testing.T) {
	var got *options
	cmd := newCmd(&factory{IO: iostreams.Streams{Out: &strings.Builder{}, Err: &strings.Builder{}}}, func(_ context.Context, o *options) error {
		got = o
		return nil
	})
	cmd.SetArgs([]string{"--domain", "retail", "--guards", "--context", "c.jsonl", "--confirm-judge", "enforce", "--confirm-second", "proposed",
		"--confirm-second-shadow", "--confirm-threshold", "0.6", "--confirm-questions", "7", "--confirm-log", "j-{session}.jsonl", "--oracle", "replay", "--", "srv"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	j := got.Proxy.Guards.Judge
	if j == nil || !j.Enforce || j.Questions != 7 || j.Log != "j-{session}.jsonl" ||
		j.Judge.Threshold != 0.6 || j.Judge.Second != judge.SecondProposed || !j.Judge.SecondShadow {
		t.Errorf("judge options %+v", j)
	}
	if got.judge.oracle.Mode != "replay" {
		t.Errorf("oracle mode %q", got.judge.oracle.Mode)
	}
}
