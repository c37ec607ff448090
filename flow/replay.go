package flow

import (
	"context"
	"strings"

	"github.com/hoist-mcp/hoist/episode"
)

// ReplayOptions say how a flow is served in a replay: the proxy's rule and
// caps, and what to tell the caller.
type ReplayOptions struct {
	Rule Rule
	Caps Caps
	// Decision, when set, is called after each decision of every run with
	// the decision and, for each of its offers, whether the agent made that
	// same call itself after the site and before its next write: the label
	// the arbiter is fitted on, and calibration is measured against.
	Decision func(d *Decision, hit []bool)
	// Oracle and AskAlways are each session's (Options): the flow's
	// questions, within Caps.Questions per episode's session.
	Oracle    Oracle
	AskAlways bool
	// Context ends the questions in flight when it is done.
	Context context.Context
	// Rest, when set, is called with each offer of a fan-out's rest had
	// the fan-out waited for the agent's first read (Options.Rest), and
	// whether the agent made that call itself after the site and before
	// its next write.
	Rest func(o *Offer, hit bool)
}

// Replay is what serving a flow did along one recorded episode.
type Replay struct {
	// Covered says, for each of the episode's calls (by index), whether the
	// agent's call had been looked up since its last write when it made it;
	// By names the site whose lookup covered it.
	Covered []bool
	By      []string
	// Lookups are the lookups the flow made, in order.
	Lookups []ReplayLookup
}

// ReplayLookup is one lookup a replay made.
type ReplayLookup struct {
	// From is the site that offered it (the tool whose result was read);
	// Server the server of the agent's call whose run made it.
	From, Server string
	// Hit says the agent made the same call itself after the site and
	// before its next write. Kept says its answer was within
	// --flow-max-bytes (a hit not kept covers nothing).
	Hit, Kept bool
	// Bytes is what its answer added to the result it was appended to
	// (AppendedSize), when kept.
	Bytes int
}

// ReplayEpisode serves f along a recorded episode as each of its servers'
// proxies would (one Session per server: the same caps, chained decisions,
// no lookup of a call in flight or answered since the last write, each task
// served the counts of the folds that do not hold it), with the
// conversation as the episode logged it. After each of the agent's results
// the flow runs; a lookup the agent made later, before its next write, is
// a hit, answered with the agent's own result, so the run chains from it;
// any other is a detour, whose answer is unknown. It is the one replay of
// a flow over recorded episodes: hoist audit's, and learn's fit of the
// arbiter. A server that is none of the flow's looks nothing up, as a proxy
// says (manual, "Serving").
func ReplayEpisode(f *Flow, ep *episode.Episode, opt ReplayOptions) *Replay {
	calls := ep.Calls()
	out := &Replay{Covered: make([]bool, len(calls)), By: make([]string, len(calls))}
	kinds := ToolKinds(f, ep)
	labels := make([]string, len(calls))
	for i, c := range calls {
		if c.By != episode.Proxy {
			labels[i] = CallLabel(c.Tool, c.Args)
		}
	}
	var said []*episode.Message // the conversation so far, for sessions made later
	var rest func(o *Offer)
	pos := 0 // the event being replayed
	if opt.Rest != nil {
		rest = func(o *Offer) { opt.Rest(o, later(ep, pos, labels, kinds, o.Label()) >= 0) }
	}
	sessions := map[string]*Session{}
	sessionOf := func(server string) *Session {
		if s, ok := sessions[server]; ok {
			return s
		}
		name := server
		if len(f.Servers) == 1 && len(ep.Servers) <= 1 {
			name = "" // a one-server flow serves a one-server session, whatever it is called
		}
		s, err := NewSession(f, Options{Rule: opt.Rule, Caps: opt.Caps, Server: name, TaskID: TaskKey(ep), Agent: ep.AgentModel, Oracle: opt.Oracle, AskAlways: opt.AskAlways, Context: opt.Context, Rest: rest})
		if err != nil {
			s = nil
		} else {
			var listed []episode.Tool
			for _, t := range ep.Tools {
				if t.Server == server || len(ep.Servers) <= 1 {
					lt := t
					lt.Name = bareName(t.Name, t.Server)
					listed = append(listed, lt)
				}
			}
			s.Listed(listed)
			for _, m := range said {
				s.Message(m.Role, m.Text)
			}
		}
		sessions[server] = s
		return s
	}
	idx := make([]int, len(calls))  // each call's index in its session
	provided := map[string]string{} // labels looked up since the last write → the site that did
	var hits []bool
	for p, ev := range ep.Events {
		pos = p
		switch {
		case ev.Type == episode.EventMessage && ev.Message != nil:
			said = append(said, ev.Message)
			for _, s := range sessions {
				if s != nil {
					s.Message(ev.Message.Role, ev.Message.Text)
				}
			}
		case ev.Type == episode.EventCall && ev.Call != nil && ev.Call.By != episode.Proxy:
			c := ev.Call
			if kinds[c.Tool] == episode.Write {
				clear(provided)
			}
			if site, ok := provided[labels[c.Index]]; ok {
				out.Covered[c.Index], out.By[c.Index] = true, site
			}
			idx[c.Index] = -1
			if s := sessionOf(c.Server); s != nil {
				idx[c.Index] = s.Call(bareName(c.Tool, c.Server), c.Args)
			}
		case ev.Type == episode.EventResult && ev.Result != nil:
			ci := ev.Result.CallIndex
			if ci < 0 || ci >= len(calls) || calls[ci].By == episode.Proxy {
				continue
			}
			s := sessions[calls[ci].Server]
			if s == nil || idx[ci] < 0 {
				continue
			}
			s.Result(idx[ci], ev.Result.Text, ev.Result.IsError)
			run := s.Run(idx[ci])
			for {
				d := run.Next()
				if opt.Decision != nil {
					hits = hits[:0]
					for i := range d.Offers {
						hits = append(hits, later(ep, pos, labels, kinds, d.Offers[i].Label()) >= 0)
					}
					opt.Decision(&d, hits)
				}
				if d.Taken < 0 {
					break
				}
				o := d.Offers[d.Taken]
				lk := ReplayLookup{From: o.From, Server: calls[ci].Server}
				if j := later(ep, pos, labels, kinds, o.Label()); j >= 0 {
					lk.Hit = true
					if r := calls[j].Result; r != nil {
						run.Answer(r.Text, r.IsError)
						lk.Kept = run.Kept()
						if lk.Kept {
							lk.Bytes = AppendedSize(o.Tool, o.Args, r.Text)
						}
					}
				}
				if lk.Hit && lk.Kept {
					provided[o.Label()] = o.From
				}
				out.Lookups = append(out.Lookups, lk)
			}
			run.End()
		}
	}
	return out
}

// ToolKinds returns the kind of each tool an episode can call, by its
// name there: the episode's listing, else the flow's (as the session's
// dedupe does). It decides what a write is in a replay.
func ToolKinds(f *Flow, ep *episode.Episode) map[string]episode.Kind {
	kinds := map[string]episode.Kind{}
	for _, t := range ep.Tools {
		kinds[t.Name] = t.Kind
	}
	for name, t := range f.Tools {
		if _, ok := kinds[name]; !ok {
			kinds[name] = t.Kind
		}
	}
	return kinds
}

func bareName(tool, server string) string {
	if server == "" {
		return tool
	}
	return strings.TrimPrefix(tool, server+"::")
}

// later returns the first call of the agent's after event pos, and before
// its next write, whose label is lb; or -1.
func later(ep *episode.Episode, pos int, labels []string, kinds map[string]episode.Kind, lb string) int {
	for _, ev := range ep.Events[pos+1:] {
		if ev.Type != episode.EventCall || ev.Call == nil || ev.Call.By == episode.Proxy {
			continue
		}
		if labels[ev.Call.Index] == lb {
			return ev.Call.Index
		}
		if kinds[ev.Call.Tool] == episode.Write {
			return -1
		}
	}
	return -1
}

// RecordedHits judges the lookups a proxy really made in a recorded
// episode (its calls by episode.Proxy) by the replay's rule: a lookup is a
// hit when the agent made that same call after it and before its next
// write. It returns, by call index, whether each of the proxy's calls was
// a hit (audit.Recorded, for the console).
func RecordedHits(ep *episode.Episode) map[int]bool {
	calls := ep.Calls()
	kinds := map[string]episode.Kind{}
	for _, t := range ep.Tools {
		kinds[t.Name] = t.Kind
	}
	labels := make([]string, len(calls))
	for i, c := range calls {
		if c.By != episode.Proxy {
			labels[i] = CallLabel(c.Tool, c.Args)
		}
	}
	out := map[int]bool{}
	for pos, ev := range ep.Events {
		if ev.Type != episode.EventCall || ev.Call == nil || ev.Call.By != episode.Proxy {
			continue
		}
		out[ev.Call.Index] = later(ep, pos, labels, kinds, CallLabel(ev.Call.Tool, ev.Call.Args)) >= 0
	}
	return out
}
