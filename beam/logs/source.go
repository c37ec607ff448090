package logs

import (
	"context"
	"io"
	"os"

	"github.com/hoist-mcp/hoist/episode"
)

// Slice is episodes in memory, an episode.Source: Filter.Domain selects by
// domain, as the store does; the other filters are not used by learn.
type Slice []*episode.Episode

var _ episode.Source = Slice(nil)

// Episodes calls fn with each episode of the filter's domain, in order.
func (s Slice) Episodes(ctx context.Context, f episode.Filter, fn func(*episode.Episode) error) error {
	for _, ep := range s {
		if f.Domain != "" && ep.Domain != f.Domain {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(ep); err != nil {
			return err
		}
	}
	return nil
}

// OpenLocal opens a local file: an Opener for tests and local runs.
func OpenLocal(_ context.Context, path string) (io.ReadCloser, error) { return os.Open(path) }
