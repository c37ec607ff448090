package audit

import (
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
)

// Recorded judges the lookups a proxy really made in a recorded episode
// (its calls by episode.Proxy) by Walk's rule: a lookup is a hit when the
// agent made that same call before its next write, and a detour otherwise.
// It returns, by call index, whether each of the proxy's calls was a hit.
// The console marks a session's lookups with it, so that a page and hoist
// audit never disagree on what a hit is.
func Recorded(ep *episode.Episode) map[int]bool {
	calls := ep.Calls()
	kinds := map[string]episode.Kind{}
	for _, t := range ep.Tools {
		kinds[t.Name] = t.Kind
	}
	labels := make([]string, len(calls))
	for i, c := range calls {
		if c.By != episode.Proxy {
			labels[i] = flow.CallLabel(c.Tool, c.Args)
		}
	}
	out := map[int]bool{}
	for pos, ev := range ep.Events {
		if ev.Type != episode.EventCall || ev.Call == nil || ev.Call.By != episode.Proxy {
			continue
		}
		out[ev.Call.Index] = later(ep, pos, labels, kinds, flow.CallLabel(ev.Call.Tool, ev.Call.Args)) >= 0
	}
	return out
}
