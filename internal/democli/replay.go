package democli

import (
	"context"
	"fmt"

	"github.com/hoist-mcp/hoist/internal/cmdutil"
	"github.com/hoist-mcp/hoist/recording"
)

// runReplay serves the recorded sessions of o.Replay on stdio until the
// input ends (docs/recordings.md). A log that cannot be read, or has a bad
// line, is a usage error naming file:line.
func runReplay(ctx context.Context, o *options) error {
	sessions, err := recording.ReadFiles(o.Replay)
	if err != nil {
		return &cmdutil.ExitError{Code: ExitUsage, Err: fmt.Errorf("--replay: %w", err)}
	}
	r := recording.NewReplayer(sessions)
	if r.Len() == 0 {
		return &cmdutil.ExitError{Code: ExitUsage, Err: fmt.Errorf("--replay: the logs hold no answered request")}
	}
	return r.Serve(ctx, o.IO.In, o.IO.Out, func(note string) {
		fmt.Fprintf(o.IO.Err, "hoist-mcp-demo: replay: %s\n", note)
	})
}
