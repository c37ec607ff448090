package cli

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/promote"
)

func TestNewCmdPromote(t *testing.T) {
	got := parseCmd(t, newCmdPromote, "--flow", "f.json", "--sessions", "logs", "--out", "p.json")
	if got.Threshold != flow.DefaultThreshold || got.MinRuns != promote.DefaultMinRuns || got.Level != promote.DefaultLevel || got.Anytime {
		t.Errorf("defaults: %+v", got)
	}
	got = parseCmd(t, newCmdPromote, "--flow", "f.json", "--store", "e.db", "-o", "p.json", "--threshold", "0.25", "--min-runs", "30", "--level", "0.9", "--anytime", "--json")
	if got.Threshold != 0.25 || got.MinRuns != 30 || got.Level != 0.9 || !got.Anytime || !got.JSON || got.Out != "p.json" || got.Flow != "f.json" {
		t.Errorf("every flag: %+v", got)
	}
	for _, level := range []string{"0", "1", "1.5"} {
		f := &Factory{IO: iostreams.Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}}
		cmd := newCmdPromote(f, func(context.Context, *promoteOptions) error { return nil })
		cmd.SetArgs([]string{"--flow", "f.json", "--store", "x.db", "--out", "p.json", "--level", level})
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		var fe *FlagError
		if _, err := cmd.ExecuteC(); !errors.As(err, &fe) || !strings.Contains(err.Error(), "--level "+level) {
			t.Errorf("--level %s: %v, want a flag error", level, err)
		}
	}
}
