package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/internal/atomicfile"
	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/promote"
	"github.com/hoist-mcp/hoist/store"
)

// promoteOptions are hoist promote's inputs.
type promoteOptions struct {
	IO iostreams.Streams
	storeOptions
	Flow        string
	Out         string
	Domain      string
	Threshold   float64
	MinRuns     int
	OracleCache string
	JSON        bool
}

func newCmdPromote(f *Factory, runF func(context.Context, *promoteOptions) error) *cobra.Command {
	opts := &promoteOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "promote --flow FILE --sessions DIR --out FILE [flags]",
		Short: "Keep only the lookups that paid in shadow runs",
		Long: `hoist promote reads the flow logs hoist-mcp --flow FILE --flow-shadow wrote
beside the session logs (ingested into the store with them), scores each
shadow run's decisions against what the agent then did, and writes a copy of
the flow that acts only at the sites whose lookups paid.

A lookup a shadow run decided is a hit when the agent made that same call
itself after the site, before its next write, and a detour otherwise. A
site is promoted when it had at least --min-runs shadow runs and the lower
bound of the 95% Wilson interval of its hit rate is above --threshold, the
ratio of a detour's cost to a saved turn (hoist-mcp's --flow-threshold): the
value of looking up there is above zero even at its lower bound. Every other
site is marked "promoted": false with its reason: too few runs; would not
pay; or contract changed (a tool it looks up is now a write, or its server
lists another input contract than the flow pinned). hoist-mcp serving the
promoted flow hands back after a call whose site was not promoted, and logs
the reason with that decision.

The report, per site, goes to standard output: runs, lookups, hits, hit
rate and its interval, and the decision (--json for scripts).

--oracle-cache is accepted for compatibility with hoist-mcp's flag: this
version's flows are served with reach or habit, which ask no oracle, so the
logged decisions are scored as they are and the cache is not read.

` + storeHelp + `

` + exitHelp,
		Example: `  hoist-mcp --record ~/.hoist/logs --flow retail.flow.json --flow-shadow -- my-server
  hoist promote --flow retail.flow.json --sessions ~/.hoist/logs --out retail.promoted.flow.json
  hoist promote --flow retail.flow.json --store episodes.db --min-runs 30 --json -o promoted.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := opts.storePath(); err != nil {
				return err
			}
			if opts.Flow == "" {
				return &FlagError{errors.New("--flow: name the flow that ran in shadow")}
			}
			if opts.Out == "" {
				return &FlagError{errors.New("--out: name the promoted flow's file")}
			}
			if !(opts.Threshold > 0 && opts.Threshold < 1) {
				return &FlagError{fmt.Errorf("--threshold %v: want above 0 and below 1", opts.Threshold)}
			}
			if opts.MinRuns < 1 {
				return &FlagError{fmt.Errorf("--min-runs %d: want at least 1", opts.MinRuns)}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runPromote(cmd.Context(), opts)
		},
	}
	addStoreFlags(cmd, &opts.storeOptions)
	fl := cmd.Flags()
	fl.StringVar(&opts.Flow, "flow", "", "the flow `FILE` the shadow runs served")
	fl.StringVarP(&opts.Out, "out", "o", "", "write the promoted flow to `FILE` (- for standard output, then the report goes to stderr)")
	fl.StringVar(&opts.Domain, "domain", "", "score only the sessions of this `DOMAIN`")
	fl.Float64Var(&opts.Threshold, "threshold", flow.DefaultThreshold, "the ratio of a detour's cost to a saved turn, which a site's hit rate must beat")
	fl.IntVar(&opts.MinRuns, "min-runs", promote.DefaultMinRuns, "the least `N` shadow runs a site needs to be promoted")
	fl.StringVar(&opts.OracleCache, "oracle-cache", "", "accepted for compatibility; not read: this version asks no oracle (`DIR`)")
	fl.BoolVar(&opts.JSON, "json", false, "write the report as JSON")
	return cmd
}

// storeRuns reads episodes and their flow logs from the store for promote.
type storeRuns struct{ db *store.DB }

var _ promote.Source = storeRuns{}

func (s storeRuns) Runs(ctx context.Context, f episode.Filter, fn func(*episode.Episode, []promote.Run) error) error {
	return s.db.EpisodesWithFlows(ctx, f, func(ep *episode.Episode, fl *store.Flow) error {
		server := func(i int) string {
			if i >= 0 && i < len(ep.Servers) {
				return ep.Servers[i].Name
			}
			return ""
		}
		type runKey struct{ server, run int }
		decisions := map[runKey][]flow.Decision{}
		for _, d := range fl.Decisions {
			k := runKey{d.Server, d.Run}
			decisions[k] = append(decisions[k], d.FlowDecision)
		}
		runs := make([]promote.Run, 0, len(fl.Runs))
		for _, r := range fl.Runs {
			runs = append(runs, promote.Run{Server: server(r.Server), Record: r.FlowRun, Decisions: decisions[runKey{r.Server, r.Index}]})
		}
		return fn(ep, runs)
	})
}

func runPromote(ctx context.Context, o *promoteOptions) error {
	f, err := flow.Load(o.Flow)
	if err != nil {
		return err
	}
	db, bad, err := openStore(ctx, o.IO, &o.storeOptions)
	if err != nil {
		return err
	}
	defer db.Close()
	out, rep, err := promote.Promote(ctx, storeRuns{db}, f, promote.Options{
		Threshold: o.Threshold, MinRuns: o.MinRuns, Filter: episode.Filter{Domain: o.Domain},
	})
	if err != nil {
		return err
	}
	if rep.ShadowRuns == 0 {
		return fmt.Errorf("no shadow runs to score%s: record sessions with hoist-mcp --flow %s --flow-shadow first", domainHint(o.Domain), o.Flow)
	}
	data, err := out.Marshal()
	if err != nil {
		return err
	}
	w := o.IO.Out
	if o.Out == "-" {
		if _, err := o.IO.Out.Write(data); err != nil {
			return err
		}
		w = o.IO.Err
	} else if err := atomicfile.WriteFile(o.Out, data, 0o600); err != nil {
		return err
	}
	if o.JSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		writePromoteText(w, rep)
	}
	if !o.Quiet && o.Out != "-" {
		n := 0
		for _, s := range rep.Sites {
			if s.Promoted {
				n++
			}
		}
		fmt.Fprintf(o.IO.Err, "hoist: promoted %d of %d sites from %d shadow runs in %d sessions; wrote %s\n", n, len(rep.Sites), rep.ShadowRuns, rep.Episodes, o.Out)
	}
	if rep.Unmatched > 0 && !o.Quiet {
		fmt.Fprintf(o.IO.Err, "hoist: %d runs could not be placed after a call of their session and were left out\n", rep.Unmatched)
	}
	if bad {
		return badInputError()
	}
	return nil
}

func writePromoteText(w io.Writer, r *promote.Report) {
	fmt.Fprintf(w, "Promotion from %d shadow runs in %d sessions (threshold %.2f, --min-runs %d)\n\n", r.ShadowRuns, r.Episodes, r.Threshold, r.MinRuns)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "site\truns\tlookups\thits\thit rate (95%)\tpromoted")
	for _, s := range r.Sites {
		name := s.Tool
		if s.Failed {
			name += " (failed)"
		}
		rate := "-"
		if s.Lookups > 0 {
			rate = fmt.Sprintf("%.2f (%.2f–%.2f)", s.HitRate, s.Lo, s.Hi)
		}
		verdict := "yes"
		if !s.Promoted {
			verdict = "no: " + s.Reason
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\n", name, s.Runs, s.Lookups, s.Hits, rate, verdict)
	}
	tw.Flush()
}
