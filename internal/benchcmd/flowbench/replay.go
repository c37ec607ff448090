package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/hoist-mcp/hoist/binding"
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/learn"
)

// replay sums what serving a flow would have done over episodes.
type replay struct {
	episodes  int
	toolTurns int // LLM turns that call tools
	ceiling   int // of them, turns of only read calls whose arguments were all in earlier results
	saved     int // of them, turns whose every call the flow had already looked up
	lookups   int // lookups the flow made
	detours   int // of them, lookups the agent never made
}

func (r *replay) add(o replay) {
	r.episodes += o.episodes
	r.toolTurns += o.toolTurns
	r.ceiling += o.ceiling
	r.saved += o.saved
	r.lookups += o.lookups
	r.detours += o.detours
}

func pct(a, b int) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(a)/float64(b))
}

func (r replay) print(w io.Writer, name string) {
	fmt.Fprintf(w, "  %s\t%d\t%d\t%d (%s)\t%d (%s)\t%s\t%d\t%d (%s)\n", name, r.episodes, r.toolTurns,
		r.ceiling, pct(r.ceiling, r.toolTurns), r.saved, pct(r.saved, r.toolTurns), pct(r.saved, r.ceiling),
		r.lookups, r.detours, pct(r.detours, r.lookups))
}

// heldOut learns one flow from eps with folds by task, and replays each
// episode served with its own task's fold left out.
func heldOut(eps []*episode.Episode, domain string, folds int, rule flow.Rule) replay {
	l := learn.New(learn.Options{Domain: domain, Folds: folds})
	for _, ep := range eps {
		l.Add(ep)
	}
	f := l.Flow()
	var r replay
	for _, ep := range eps {
		r.add(replayEpisode(f, ep, rule))
	}
	return r
}

func label(tool string, args []byte) string {
	v := (&binding.Result{Text: string(args)}).Doc()
	if _, ok := v.(map[string]any); !ok {
		v = map[string]any{}
	}
	return tool + " " + jsontext.Canonical(v)
}

// replayEpisode serves f along one recorded episode, offline: after each of
// the agent's results the flow runs; a lookup the agent made later is
// answered with the agent's own result (so decisions chain), one it never
// made is a detour. A turn is saved when every call in it was looked up
// since the last write.
func replayEpisode(f *flow.Flow, ep *episode.Episode, rule flow.Rule) replay {
	r := replay{episodes: 1}
	kinds := map[string]episode.Kind{}
	for _, t := range ep.Tools {
		kinds[t.Name] = t.Kind
	}
	calls := ep.Calls()
	labels := make([]string, len(calls))
	for i, c := range calls {
		labels[i] = label(c.Tool, c.Args)
	}
	s, err := flow.NewSession(f, flow.Options{Rule: rule, TaskID: flow.TaskKey(ep)})
	if err != nil {
		return r
	}
	sess := make([]int, len(calls))
	covered := make([]bool, len(calls))
	provided := map[string]bool{}
	var earlier []string // result texts so far
	ceilingOK := map[int]bool{}
	for pos, ev := range ep.Events {
		switch {
		case ev.Type == episode.EventCall && ev.Call != nil && ev.Call.By != episode.Proxy:
			c := ev.Call
			if kinds[c.Tool] == episode.Write {
				clear(provided)
			}
			covered[c.Index] = provided[labels[c.Index]]
			sess[c.Index] = s.Call(c.Tool, c.Args)
			ok, seen := ceilingOK[c.Turn]
			if !seen {
				ok = true
			}
			ceilingOK[c.Turn] = ok && kinds[c.Tool] == episode.Read && allIn(episode.ArgValues(c.Args), earlier)
		case ev.Type == episode.EventResult && ev.Result != nil:
			ci := ev.Result.CallIndex
			if ci < 0 || ci >= len(calls) || calls[ci].By == episode.Proxy {
				continue
			}
			earlier = append(earlier, ev.Result.Text)
			s.Result(sess[ci], ev.Result.Text, ev.Result.IsError)
			run := s.Run(sess[ci])
			for {
				d := run.Next()
				if d.Taken < 0 {
					break
				}
				o := d.Offers[d.Taken]
				lb := o.Label()
				provided[lb] = true
				r.lookups++
				if j := later(ep, pos, labels, lb); j >= 0 && calls[j].Result != nil {
					run.Answer(calls[j].Result.Text, calls[j].Result.IsError)
				} else {
					r.detours++
				}
			}
			run.End()
		}
	}
	for _, t := range ep.Turns {
		var agent []int
		for _, ci := range t.Calls {
			if calls[ci].By != episode.Proxy {
				agent = append(agent, ci)
			}
		}
		if len(agent) == 0 {
			continue
		}
		r.toolTurns++
		if ceilingOK[t.Index] {
			r.ceiling++
		}
		all := true
		for _, ci := range agent {
			all = all && covered[ci]
		}
		if all {
			r.saved++
		} else if ceilingOK[t.Index] && misses != nil {
			for _, ci := range agent {
				if !covered[ci] {
					misses[ep.Domain+" "+calls[ci].Tool+" "+string(calls[ci].Args)]++
				}
			}
		}
	}
	return r
}

// misses counts, with -v, the calls of ceiling turns the flow did not look up.
var misses map[string]int

// later returns the first agent call after event pos whose label is lb, or -1.
func later(ep *episode.Episode, pos int, labels []string, lb string) int {
	for _, ev := range ep.Events[pos+1:] {
		if ev.Type == episode.EventCall && ev.Call != nil && ev.Call.By != episode.Proxy && labels[ev.Call.Index] == lb {
			return ev.Call.Index
		}
	}
	return -1
}

func allIn(values, texts []string) bool {
	for _, v := range values {
		found := false
		for _, t := range texts {
			if strings.Contains(t, v) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
