package audit

import (
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
)

// Recorded judges the lookups a proxy really made in a recorded episode
// (its calls by episode.Proxy) by the replay's rule: a lookup is a hit when
// the agent made that same call before its next write, and a detour
// otherwise. It returns, by call index, whether each of the proxy's calls
// was a hit. The console marks a session's lookups with it, so that a page
// and hoist audit never disagree on what a hit is.
func Recorded(ep *episode.Episode) map[int]bool { return flow.RecordedHits(ep) }
