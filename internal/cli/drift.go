package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/drift"
	"github.com/hoist-mcp/hoist/earned"
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/learn"
	"github.com/hoist-mcp/hoist/store"
)

// Exit codes of hoist drift, for CI.
const (
	driftNone  = 0
	driftFound = 1
	driftError = 2
)

// driftMaxBindings is how many bindings per lookup drift counts in the
// sessions: all of them, in practice.
const driftMaxBindings = 1 << 12

// driftOptions are hoist drift's inputs.
type driftOptions struct {
	IO iostreams.Streams
	storeOptions
	Flow       string
	Alpha      float64
	MinSupport int
	JSON       bool
}

func newCmdDrift(f *Factory, runF func(context.Context, *driftOptions) error) *cobra.Command {
	opts := &driftOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "drift --flow FILE --sessions DIR [--store PATH] [flags]",
		Short: "Say what changed since a flow was learned",
		Long: `hoist drift compares a flow with the sessions recorded since: it learns
the sessions' own counts with the same code as hoist learn (every binding
that matched at least once), and reports

  - tools added or removed, and input contracts (arguments, their types,
    which are required) or kinds changed, from the sessions' tools/list
    against the tools the flow pinned; a server whose tools the sessions
    never listed has removed nothing;
  - rates that moved: at each site the flow and the sessions share, each
    lookup's reach (how often the agent made it before its next write) and
    each binding's match rate, compared with a pooled two-proportion z test.
    A binding of the flow counts where it matched in the sessions, even
    when its reference met only one value there (learn would write that
    as a constant). With m tests, a rate has drifted when its p-value is
    below --alpha / m (the Bonferroni correction: the chance of any false
    alarm among the m tests stays below --alpha). Each rate is shown with its Wilson interval
    at level 1 − alpha;
  - frequent new sites: sites of the sessions the flow lacks, seen at least
    --min-support times (default: the flow's min_support).

The flow's sites the sessions never reached are listed, and are not drift.

Sessions that served the flow (hoist-mcp --flow) hold the proxy's lookups,
after which the agent did not make the calls they answered. Each lookup
whose hit estimate is at least ½ (what it earned, as hoist audit judges
it; docs/audit.md, "Served sessions") counts as the agent's own call, a
level's calls made together as one turn; the report says what the
lookups earned (served, in the JSON).

` + storeHelp + `

Exit codes, for CI: 0 no drift; 1 drift; 2 error (bad flags, an unreadable
flow or store, or session logs with bad input, each named on stderr).`,
		Example: `  hoist drift --flow retail.flow.json --sessions ~/.hoist/logs
  hoist drift --flow retail.flow.json --sessions ./new-logs --store /tmp/new.db --json
  hoist drift --flow retail.flow.json --sessions ./new-logs -q || echo "relearn the flow"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Flow == "" {
				return &FlagError{errors.New("--flow: want the flow file to compare")}
			}
			if _, err := opts.storePath(); err != nil {
				return err
			}
			if !(opts.Alpha > 0 && opts.Alpha < 1) {
				return &FlagError{fmt.Errorf("--alpha %g: want a level between 0 and 1", opts.Alpha)}
			}
			if opts.MinSupport < 0 {
				return &FlagError{fmt.Errorf("--min-support %d: want 0 (the flow's) or more", opts.MinSupport)}
			}
			run := runDrift
			if runF != nil {
				run = runF
			}
			if err := run(cmd.Context(), opts); err != nil {
				var ec *exitCodeError
				if errors.As(err, &ec) {
					return err
				}
				return &exitCodeError{code: driftError, err: err}
			}
			return nil
		},
	}
	addStoreFlags(cmd, &opts.storeOptions)
	fl := cmd.Flags()
	fl.StringVar(&opts.Flow, "flow", "", "the flow `FILE` to compare with the sessions")
	fl.Float64Var(&opts.Alpha, "alpha", drift.DefaultAlpha, "the family-wise false-alarm rate `ALPHA` of the rate tests (Bonferroni-corrected)")
	fl.IntVar(&opts.MinSupport, "min-support", 0, "report new sites seen at least `N` times (0: the flow's min_support)")
	fl.BoolVar(&opts.JSON, "json", false, "write the report as JSON")
	return cmd
}

func runDrift(ctx context.Context, o *driftOptions) error {
	old, err := flow.Load(o.Flow)
	if err != nil {
		return err
	}
	db, bad, err := openStore(ctx, o.IO, &o.storeOptions)
	if err != nil {
		return err
	}
	defer db.Close()
	// Every binding that matched at least once, however many: a binding of
	// the flow missing from the sessions' counts means it never matched,
	// not that others outranked it.
	// Twice: keeping every reference, so that a reference that met one
	// value in these sessions is still counted as the reference, and as
	// the flow was learned, with such a reference written as its value, so
	// that a constant of the flow is found too (drift.Options.Also).
	src := &unserved{db: db}
	lopt := learn.Options{Domain: old.Domain, Folds: 1, MinSupport: 1, MaxBindings: driftMaxBindings, KeepReferences: true}
	now, err := learn.FromSource(ctx, src, episode.Filter{Domain: old.Domain}, lopt)
	if err != nil {
		return err
	}
	lopt.KeepReferences = false
	also, err := learn.FromSource(ctx, &unserved{db: db}, episode.Filter{Domain: old.Domain}, lopt)
	if err != nil {
		return err
	}
	if bad {
		return &exitCodeError{code: driftError, err: errors.New("some session logs hold bad input (named above): no verdict")}
	}
	if now.Learned.Episodes == 0 {
		return errors.New("no episodes in the sessions" + domainHint(old.Domain))
	}
	r := drift.Compare(old, now, drift.Options{Alpha: o.Alpha, MinSupport: o.MinSupport, Also: also})
	if src.served.Sessions > 0 {
		r.Served = &src.served
	}
	if o.JSON {
		enc := json.NewEncoder(o.IO.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else if err := writeDrift(o.IO.Out, o.Flow, r); err != nil {
		return err
	}
	if r.Drift {
		return &exitCodeError{code: driftFound, err: errors.New("")} // the report says it
	}
	return nil
}

// unserved is the store's episodes as learn counts them for drift: a
// session that served the flow holds the proxy's lookups, after which the
// agent did not make the calls they answered, so its counts would say the
// agent stopped reaching them (a false alarm). Each lookup of the proxy's
// whose hit the served log supports, by what it earned (package earned:
// its estimate at least ½), counts as the agent's own call, where the
// proxy made it; the others as calls the agent did not make. served sums
// what the lookups earned, as hoist audit reports it.
type unserved struct {
	db     *store.DB
	mu     sync.Mutex
	served drift.Served
}

var _ episode.Source = (*unserved)(nil)

func (u *unserved) Episodes(ctx context.Context, f episode.Filter, fn func(*episode.Episode) error) error {
	return u.db.EpisodesWithFlows(ctx, f, func(ep *episode.Episode, fl *store.Flow) error {
		if !earned.Served(ep) {
			return fn(ep)
		}
		var ds []flow.Decision
		if fl != nil {
			for _, d := range fl.Decisions {
				ds = append(ds, d.FlowDecision)
			}
		}
		e := earned.Of(ep, ds)
		u.mu.Lock()
		u.served.Sessions++
		u.served.Lookups += len(e.Lookups)
		u.served.Hits.Add(drift.Bounds(e.Hits))
		u.served.Saved.Add(drift.Bounds(e.Saved))
		u.served.Counted += countedHits(e)
		u.mu.Unlock()
		return fn(asUnserved(ep, e))
	})
}

// countedHits counts the lookups asUnserved makes the agent's calls.
func countedHits(e *earned.Earned) int {
	n := 0
	for _, lk := range e.Lookups {
		if lk.Hit.Est >= 0.5 {
			n++
		}
	}
	return n
}

// asUnserved returns a copy of ep in which each of the proxy's lookups
// with a hit estimate of at least ½ is a call of the agent's. The proxy
// makes a level's lookups one after the other (each call, then its
// answer); the agent makes them as one turn of calls, none of which
// follows another's answer. So each such call is moved before the answers
// of the calls of its level just before it (never past another call: the
// calls keep their order and indexes), and takes the turn of its level's
// first call.
func asUnserved(ep *episode.Episode, e *earned.Earned) *episode.Episode {
	type level struct{ after, depth int }
	hit := map[int]level{}
	for _, lk := range e.Lookups {
		if lk.Hit.Est >= 0.5 {
			hit[lk.Call] = level{lk.After, lk.Depth}
		}
	}
	out := *ep
	out.Events = make([]episode.Event, 0, len(ep.Events))
	turn := map[level]int{}
	for _, ev := range ep.Events {
		lv, ok := level{}, false
		if ev.Call != nil && ev.Call.By == episode.Proxy {
			lv, ok = hit[ev.Call.Index]
		}
		if !ok {
			out.Events = append(out.Events, ev)
			continue
		}
		c := *ev.Call
		c.By = episode.Agent
		if t, seen := turn[lv]; seen {
			c.Turn = t
		} else {
			turn[lv] = c.Turn
		}
		ev.Call = &c
		at := len(out.Events)
		for at > 0 {
			r := out.Events[at-1].Result
			if r == nil {
				break
			}
			if l, ok := hit[r.CallIndex]; !ok || l != lv {
				break
			}
			at--
		}
		out.Events = slices.Insert(out.Events, at, ev)
	}
	return &out
}

// writeDrift writes the report as text tables.
func writeDrift(w io.Writer, name string, r *drift.Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "flow %s (%d episodes) against %d episodes of the sessions\n", name, r.FlowEpisodes, r.Episodes)
	fmt.Fprintf(&b, "rate tests: %d, two-proportion z, Bonferroni at alpha %g (each p < %.3g); intervals: Wilson at %g%%\n",
		r.Tests, r.Alpha, r.Threshold, 100*(1-r.Alpha))
	if sv := r.Served; sv != nil {
		fmt.Fprintf(&b, "served: %s the flow; the proxy's %d lookups earned hits %s and LLM turns saved %s (estimate (lower–upper bound), as hoist audit judges them); the %d whose estimate is at least ½ count as the agent's own calls\n",
			plural(sv.Sessions, "session", "sessions")+" served", sv.Lookups, driftBounds(sv.Hits), driftBounds(sv.Saved), sv.Counted)
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	if len(r.Added)+len(r.Removed)+len(r.Contracts) > 0 {
		fmt.Fprintln(tw, "TOOLS\tCHANGE")
		for _, t := range r.Added {
			fmt.Fprintf(tw, "%s\tadded\n", t)
		}
		for _, t := range r.Removed {
			fmt.Fprintf(tw, "%s\tremoved\n", t)
		}
		for _, c := range r.Contracts {
			fmt.Fprintf(tw, "%s\t%s\n", c.Tool, strings.Join(c.Changes, "; "))
		}
		fmt.Fprintln(tw)
	}
	if len(r.Rates) > 0 {
		fmt.Fprintln(tw, "SITE\tLOOKUP\tRATE\tFLOW\tSESSIONS\tP\t")
		for _, x := range r.Rates {
			what := x.Measure
			if x.Binding != "" {
				what += " " + x.Binding
			}
			mark := ""
			if x.Drift {
				mark = "DRIFT"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.3g\t%s\n", x.Site, x.Lookup, what, prop(x.Flow), prop(x.Now), x.P, mark)
		}
		fmt.Fprintln(tw)
	}
	if len(r.NewSites) > 0 {
		fmt.Fprintf(tw, "NEW SITE (seen ≥ %d)\tCOUNT\n", r.MinSupport)
		for _, s := range r.NewSites {
			fmt.Fprintf(tw, "%s\t%d\n", s.Site, s.Count)
		}
		fmt.Fprintln(tw)
	}
	if len(r.Unseen) > 0 {
		fmt.Fprintf(tw, "not reached in the sessions (not drift): %s\n\n", strings.Join(r.Unseen, ", "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Drift {
		fmt.Fprintf(&b, "drift: %d findings\n", r.Findings())
	} else {
		b.WriteString("no drift\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func driftBounds(b drift.Bounds) string {
	return fmt.Sprintf("%.1f (%.1f–%.1f)", b.Est, b.Lo, b.Hi)
}

func prop(p drift.Proportion) string {
	return fmt.Sprintf("%.2f (%d/%d) [%.2f, %.2f]", p.Rate, p.K, p.N, p.Lo, p.Hi)
}
