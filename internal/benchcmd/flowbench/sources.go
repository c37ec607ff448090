package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/hoist-mcp/hoist/audit"
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
)

// sources are, with -sources, the replay's lookups and the calls it missed
// by where they came from: a lookup by its domain, site, tool and binding
// (flow.OfferBinding); a missed call (of a ceiling turn, not looked up) by
// the offer of that very call the flow declined, when one was offered
// anywhere in the episode, else by its domain, the tool of the agent's
// call before it and its own tool ("not offered").
var sources map[string]*source

type source struct {
	lookups, hits, misses int
}

func sourceOf(k string) *source {
	s := sources[k]
	if s == nil {
		s = &source{}
		sources[k] = s
	}
	return s
}

// countSources replays f along ep as audit.Walk does, counting its lookups
// and misses into sources.
func countSources(f *flow.Flow, ep *episode.Episode, rule flow.Rule) {
	offered := map[string]string{} // label of an offer → its source
	flow.ReplayEpisode(f, ep, flow.ReplayOptions{Rule: rule, Caps: replayCaps, Decision: func(d *flow.Decision, hit []bool) {
		for i := range d.Offers {
			o := &d.Offers[i]
			k := ep.Domain + "\t" + o.From + "\t" + o.Tool + "\t" + flow.OfferBinding(o.Binding)
			if i == d.Taken {
				s := sourceOf(k)
				s.lookups++
				if hit[i] {
					s.hits++
				}
			}
			if _, ok := offered[o.Label()]; !ok {
				offered[o.Label()] = k
			}
		}
	}})
	calls := ep.Calls()
	audit.Walk(f, ep, audit.Options{Rule: rule, Caps: replayCaps, Missed: func(ep *episode.Episode, c *episode.Call) {
		if k, ok := offered[flow.CallLabel(c.Tool, c.Args)]; ok {
			sourceOf(k).misses++
			return
		}
		before := "(none)"
		for i := c.Index - 1; i >= 0; i-- {
			if calls[i].By != episode.Proxy {
				before = calls[i].Tool
				break
			}
		}
		sourceOf(ep.Domain+"\t"+before+"\t"+c.Tool+"\t(not offered)").misses++
	}})
}

// printSources prints sources, by domain, most detours and misses first.
func printSources(out io.Writer) {
	keys := make([]string, 0, len(sources))
	for k := range sources {
		keys = append(keys, k)
	}
	domain := func(k string) string { return k[:strings.IndexByte(k, '\t')] }
	weight := func(k string) int { s := sources[k]; return s.lookups - s.hits + s.misses }
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(strings.Compare(domain(b), domain(a)), cmp.Compare(weight(b), weight(a)), strings.Compare(a, b))
	})
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "\nlookups and misses by source\ndomain\tsite\tlookup\tbinding\tlookups\thits\tdetours\tmisses")
	for _, k := range keys {
		s := sources[k]
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\n", k, s.lookups, s.hits, s.lookups-s.hits, s.misses)
	}
	w.Flush()
}
