package mcpcli

import (
	"context"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/internal/iostreams"
)

// The flow is given the oracle exactly when it would ask it: its arbiter
// has a weight for the model's answer and decides. The judge and the flow
// share the one oracle opened.
func TestFlowOracleOpened(t *testing.T) {
	withArbiter := func(features []string, weights []float64) *flow.Flow {
		return &flow.Flow{Version: flow.Version, Servers: []string{"s"}, Tools: map[string]flow.Tool{"get": {Server: "s", Kind: episode.Read}},
			Arbiter: &flow.Arbiter{Features: features, Weights: weights}}
	}
	weighs := withArbiter([]string{flow.FeatureBias, flow.FeatureOracle}, []float64{0, 1})
	for _, tc := range []struct {
		name  string
		f     *flow.Flow
		extra []string
		want  bool
	}{
		{"an oracle weight, the arbiter by default", weighs, nil, true},
		{"--flow-decider arbiter", weighs, []string{"--flow-decider", "arbiter"}, true},
		{"--flow-decider reach", weighs, []string{"--flow-decider", "reach"}, false},
		{"a weight of 0", withArbiter([]string{flow.FeatureBias, flow.FeatureOracle}, []float64{0, 0}), nil, false},
		{"no oracle feature", withArbiter([]string{flow.FeatureBias}, []float64{1}), nil, false},
		{"no arbiter", &flow.Flow{Version: flow.Version}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got *options
			errb := &strings.Builder{}
			cmd := newCmd(&factory{IO: iostreams.Streams{Out: &strings.Builder{}, Err: errb}}, func(_ context.Context, o *options) error {
				got = o
				return nil
			})
			cmd.SetArgs(append(append([]string{"--flow", "f.json", "--oracle", "mock"}, tc.extra...), "--", "srv"))
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			got.Proxy.Flow.Flow = tc.f // as runProxy reads it
			if err := openOracle(got); err != nil {
				t.Fatal(err)
			}
			if has := got.Proxy.Flow.Oracle.Oracle != nil; has != tc.want {
				t.Errorf("oracle given to the flow: %v, want %v (stderr %q)", has, tc.want, errb)
			}
		})
	}
}
