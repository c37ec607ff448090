package flow

import (
	"github.com/hoist-mcp/hoist/binding"
	"github.com/hoist-mcp/hoist/episode"
)

// ScopeAt returns the scope of an episode at the result of call site (its
// Call.Index): that result is the site, and Calls hold every result that
// came before it in the episode's events, and it. A call without a result
// gives a scope with no site.
func ScopeAt(ep *episode.Episode, site int) *binding.Scope {
	s := &binding.Scope{Calls: make([]*binding.Result, 0, site+1)}
	calls := ep.Calls()
	for _, ev := range ep.Events {
		if ev.Type != episode.EventResult || ev.Result == nil {
			continue
		}
		i := ev.Result.CallIndex
		tool := ""
		if i >= 0 && i < len(calls) {
			tool = calls[i].Tool
		}
		s.Add(i, binding.NewResult(tool, ev.Result.Text))
		if i == site {
			return s
		}
	}
	s.Site = nil
	return s
}
