// Package audit is hoist audit: the offline counterfactual of serving a flow
// in recorded episodes (issue 6, point 1). Each episode is walked call by
// call through the same decision code the proxy runs (flow.Session: caps,
// chained decisions, dedupe since the last write, folds by task); a lookup
// the flow takes is answered with the agent's own result when the agent made
// that same call before its next write (a hit), and is a detour otherwise,
// whose answer is unknown, so nothing chains from it. An LLM turn is saved
// when every call in it had already been looked up. Beside the savings it
// reports the read-only ceiling of the same episodes, and bootstrap
// intervals over episodes.
//
// audit reads episodes through episode.Source, never the store (DESIGN.md).
package audit

import (
	"context"
	"errors"
	"strings"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
)

// Options say how the flow is served in the audit: the proxy's rule and caps.
type Options struct {
	Rule flow.Rule
	Caps flow.Caps
	// Filter selects the episodes.
	Filter episode.Filter
	// Resamples is the number of bootstrap resamples (DefaultResamples when
	// 0); Seed seeds them, so the same input gives the same report.
	Resamples int
	Seed      uint64
	// Missed, when set, is called by Walk with each of the agent's calls
	// that the flow had not looked up in a turn within the read-only
	// ceiling: what a study of a flow lists to see what it misses (the flow
	// benchmark's -v). It changes no count.
	Missed func(ep *episode.Episode, c *episode.Call)
}

// DefaultResamples is the number of bootstrap resamples of an interval.
const DefaultResamples = 1000

// Counts are what serving a flow did in one episode, or summed over many, at
// one site, one server, or in total.
type Counts struct {
	// Lookups the flow made at the site (a site is named by the tool whose
	// result offered them: the agent's call, or a lookup's in a chain); Hits the agent made itself before its next
	// write; Detours the others (Lookups = Hits + Detours).
	Lookups int `json:"lookups"`
	Hits    int `json:"hits"`
	Detours int `json:"detours"`
	// Saved are the LLM turns saved: turns whose every call had already been
	// looked up. A turn of several sites' or servers' calls is shared among
	// them by its calls, so the rows sum to the total.
	Saved float64 `json:"saved_turns"`
	// Ceiling are the turns of only read calls whose every argument value
	// was found verbatim in an earlier result (per server, shared by calls).
	Ceiling float64 `json:"ceiling_turns"`
}

func (c *Counts) add(o Counts) {
	c.Lookups += o.Lookups
	c.Hits += o.Hits
	c.Detours += o.Detours
	c.Saved += o.Saved
	c.Ceiling += o.Ceiling
}

// Episode is one episode's audit: its LLM turns (those with a call of the
// agent's), and the counts per site, per server and in total.
type Episode struct {
	ID      string
	Turns   int
	Total   Counts
	Sites   map[string]*Counts
	Servers map[string]*Counts
}

func (e *Episode) site(name string) *Counts {
	c := e.Sites[name]
	if c == nil {
		c = &Counts{}
		e.Sites[name] = c
	}
	return c
}

func (e *Episode) server(name string) *Counts {
	c := e.Servers[name]
	if c == nil {
		c = &Counts{}
		e.Servers[name] = c
	}
	return c
}

// Walk audits one episode: it serves f along it as each of its servers'
// proxies would, and counts. It is the one replay of a flow over recorded
// episodes: hoist audit's, and the flow benchmark's held-out share of
// turns saved, so that the benchmark measures the algorithm that ships. A server that is none of the flow's looks
// nothing up, as a proxy says (manual, "Serving"); its turns still count.
func Walk(f *flow.Flow, ep *episode.Episode, opt Options) (*Episode, error) {
	out := &Episode{ID: ep.ID, Sites: map[string]*Counts{}, Servers: map[string]*Counts{}}
	calls := ep.Calls()
	// Kinds decide what a write is: the flow's, where it knows the tool
	// (as the session's dedupe does), else the episode's listing.
	kinds := map[string]episode.Kind{}
	for _, t := range ep.Tools {
		kinds[t.Name] = t.Kind
	}
	for name, t := range f.Tools {
		if _, ok := kinds[name]; !ok {
			kinds[name] = t.Kind
		}
	}
	labels := make([]string, len(calls))
	for i, c := range calls {
		if c.By != episode.Proxy {
			labels[i] = flow.CallLabel(c.Tool, c.Args)
		}
	}
	// One session per server, as one proxy wraps one server.
	sessions := map[string]*flow.Session{}
	sessionOf := func(server string) *flow.Session {
		if s, ok := sessions[server]; ok {
			return s
		}
		name := server
		if len(f.Servers) == 1 && len(ep.Servers) <= 1 {
			name = "" // a one-server flow serves a one-server session, whatever it is called
		}
		s, err := flow.NewSession(f, flow.Options{Rule: opt.Rule, Caps: opt.Caps, Server: name, TaskID: flow.TaskKey(ep)})
		if err != nil {
			s = nil
		} else {
			var listed []episode.Tool
			for _, t := range ep.Tools {
				if t.Server == server || len(ep.Servers) <= 1 {
					lt := t
					lt.Name = bare(t.Name, t.Server)
					listed = append(listed, lt)
				}
			}
			s.Listed(listed)
		}
		sessions[server] = s
		return s
	}
	idx := make([]int, len(calls))   // each call's index in its session
	by := make([]string, len(calls)) // the site whose lookup covered the call
	covered := make([]bool, len(calls))
	provided := map[string]string{} // labels looked up since the last write → the site that did
	ceilingOK := map[int]bool{}
	var earlier strings.Builder // every result text so far
	for pos, ev := range ep.Events {
		switch {
		case ev.Type == episode.EventCall && ev.Call != nil && ev.Call.By != episode.Proxy:
			c := ev.Call
			if kinds[c.Tool] == episode.Write {
				clear(provided)
			}
			if site, ok := provided[labels[c.Index]]; ok {
				covered[c.Index], by[c.Index] = true, site
			}
			idx[c.Index] = -1
			if s := sessionOf(c.Server); s != nil {
				idx[c.Index] = s.Call(bare(c.Tool, c.Server), c.Args)
			}
			ok, seen := ceilingOK[c.Turn]
			if !seen {
				ok = true
			}
			ceilingOK[c.Turn] = ok && kinds[c.Tool] == episode.Read && allIn(episode.ArgValues(c.Args), earlier.String())
		case ev.Type == episode.EventResult && ev.Result != nil:
			ci := ev.Result.CallIndex
			if ci < 0 || ci >= len(calls) || calls[ci].By == episode.Proxy {
				continue
			}
			earlier.WriteString(ev.Result.Text)
			earlier.WriteByte('\n')
			s := sessions[calls[ci].Server]
			if s == nil || idx[ci] < 0 {
				continue
			}
			s.Result(idx[ci], ev.Result.Text, ev.Result.IsError)
			run := s.Run(idx[ci])
			for {
				d := run.Next()
				if d.Taken < 0 {
					break
				}
				o := d.Offers[d.Taken]
				from, lb := o.From, o.Label()
				provided[lb] = from
				sc, sv := out.site(from), out.server(calls[ci].Server)
				sc.Lookups++
				sv.Lookups++
				out.Total.Lookups++
				if j := later(ep, pos, labels, kinds, lb); j >= 0 {
					sc.Hits++
					sv.Hits++
					out.Total.Hits++
					if r := calls[j].Result; r != nil {
						run.Answer(r.Text, r.IsError)
					}
				} else {
					sc.Detours++
					sv.Detours++
					out.Total.Detours++
				}
			}
			run.End()
		}
	}
	for _, t := range ep.Turns {
		var agent []int
		for _, ci := range t.Calls {
			if ci >= 0 && ci < len(calls) && calls[ci].By != episode.Proxy {
				agent = append(agent, ci)
			}
		}
		if len(agent) == 0 {
			continue
		}
		out.Turns++
		share := 1 / float64(len(agent))
		if ceilingOK[t.Index] {
			out.Total.Ceiling++
			for _, ci := range agent {
				out.server(calls[ci].Server).Ceiling += share
			}
		}
		all := true
		for _, ci := range agent {
			all = all && covered[ci]
		}
		if all {
			out.Total.Saved++
			for _, ci := range agent {
				out.site(by[ci]).Saved += share
				out.server(calls[ci].Server).Saved += share
			}
		} else if ceilingOK[t.Index] && opt.Missed != nil {
			for _, ci := range agent {
				if !covered[ci] {
					opt.Missed(ep, calls[ci])
				}
			}
		}
	}
	return out, nil
}

func bare(tool, server string) string {
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

func allIn(values []string, text string) bool {
	for _, v := range values {
		if !strings.Contains(text, v) {
			return false
		}
	}
	return true
}

// Run audits every episode of src the filter selects, and reports.
func Run(ctx context.Context, src episode.Source, f *flow.Flow, opt Options) (*Report, error) {
	if f == nil {
		return nil, errors.New("no flow")
	}
	var eps []*Episode
	err := src.Episodes(ctx, opt.Filter, func(ep *episode.Episode) error {
		a, err := Walk(f, ep, opt)
		if err != nil {
			return err
		}
		eps = append(eps, a)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return Summarize(eps, opt), nil
}
