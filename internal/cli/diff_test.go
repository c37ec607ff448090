package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/internal/iostreams"
)

func TestNewCmdDiff(t *testing.T) {
	var got *diffOptions
	cmd := newCmdDiff(&Factory{IO: iostreams.Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}},
		func(_ context.Context, o *diffOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--json", "a.jsonl", "logs/", "--ignore", "result.x", "--ignore=t:error"})
	if err := cmd.Execute(); err != nil || got == nil {
		t.Fatalf("err %v", err)
	}
	if got.A != "a.jsonl" || got.B != "logs/" || !got.JSON || strings.Join(got.Ignore, " ") != "result.x t:error" {
		t.Errorf("options %+v", got)
	}
}
