package main

import (
	"fmt"
	"io"

	"github.com/hoist-mcp/hoist/audit"
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
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

// replayEpisode serves f along one recorded episode, offline, through
// audit.Walk (the replay hoist audit ships): after each of the agent's
// results the flow runs; a lookup the agent made later, before its next
// write, is answered with the agent's own result (so decisions chain), one
// it never made is a detour. A turn is saved when every call in it was
// looked up since the last write.
func replayEpisode(f *flow.Flow, ep *episode.Episode, rule flow.Rule) replay {
	opt := audit.Options{Rule: rule}
	if misses != nil {
		opt.Missed = func(ep *episode.Episode, c *episode.Call) {
			misses[ep.Domain+" "+c.Tool+" "+string(c.Args)]++
		}
	}
	a, err := audit.Walk(f, ep, opt)
	if err != nil {
		return replay{episodes: 1}
	}
	// The total's saved and ceiling turns are whole turns (a row's may be
	// shares of one).
	return replay{episodes: 1, toolTurns: a.Turns, ceiling: int(a.Total.Ceiling), saved: int(a.Total.Saved),
		lookups: a.Total.Lookups, detours: a.Total.Detours}
}

// misses counts, with -v, the calls of ceiling turns the flow did not look up.
var misses map[string]int
