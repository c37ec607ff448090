package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/audit"
	"github.com/hoist-mcp/hoist/earned"
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/internal/atomicfile"
	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/store"
)

// auditOptions are hoist audit's inputs.
type auditOptions struct {
	IO iostreams.Streams
	storeOptions
	Flow   string
	Domain string
	ruleOptions
	JSON        bool
	HTML        string
	Resamples   int
	Seed        uint64
	Calibration bool
}

func newCmdAudit(f *Factory, runF func(context.Context, *auditOptions) error) *cobra.Command {
	opts := &auditOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "audit --flow FILE --sessions DIR [flags]",
		Short: "What serving a flow would have saved in recorded sessions, and what it would have cost",
		Long: `hoist audit replays recorded sessions as if hoist-mcp had served the flow in
them, offline: after each of the agent's calls it decides exactly as the
proxy would (the same code, caps, chained decisions, no lookup of a call made
since the last write, and each task served the counts of the folds that do
not hold it). A lookup the agent then made itself before its next write is a
hit, answered with the agent's own result, so decisions chain from it; one it
never made is a detour, whose result is unknown, so nothing chains from it.
An LLM turn is saved when every call in it had already been looked up.

A session recorded while hoist-mcp served a flow is not replayed: its
lookups are the proxy's own, in its log, and the agent's turns are already
shorter. Its log cannot show what the agent would have done without them,
so its hits and turns saved are an estimate (from the probabilities its
flow log's decisions gave) between a lower bound (the agent used a value
the lookup returned) and an upper bound (the agent did not make the call
again before its next write), written "3.0 (1.0–3.0)". Shadow sessions
(--flow-shadow) are replayed like any other.

It reports, per site (the tool whose result offered the lookup), per server
and in total: lookups, hits, detours, precision (hits / lookups), the LLM
turns saved as a share of all LLM turns, and beside it three ceilings of the
same sessions, each the share of turns whose calls were all reads with every
argument value found verbatim: in an earlier result (results); there or
among the flow's constants (constants); or, besides, in what the customer
said before the call (conversation, when the sessions were recorded with
--context). A flow binds from results, constants and the conversation, so
no flow saves more than the last ceiling its sessions have: the report says
which ("a flow can reach"). Each share comes with a 95% bootstrap interval
over sessions.

--calibration adds the decider's reliability table: every offer it scored
(once per run), in ten bins of its probability, against the share of them
the agent made itself before its next write, and the expected calibration
error (the offers' mean |probability − hit rate| by bin). The arbiter's
probability is calibrated by construction; reach and habit's are not.

--json writes the report as JSON; --html FILE also writes a page with a chart
of turns saved and detours per site (inline SVG, nothing to fetch).

` + storeHelp + `

` + exitHelp,
		Example: `  hoist audit --flow retail.flow.json --sessions ~/.hoist/logs
  hoist audit --flow retail.flow.json --store held-out.db --json
  hoist audit --flow retail.flow.json --sessions logs --threshold 0.5 --html audit.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := opts.storePath(); err != nil {
				return err
			}
			if opts.Flow == "" {
				return &FlagError{fmt.Errorf("--flow: name the flow to audit")}
			}
			if err := opts.ruleOptions.check(); err != nil {
				return err
			}
			if opts.Resamples < 1 {
				return &FlagError{fmt.Errorf("--resamples %d: want at least 1", opts.Resamples)}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runAudit(cmd.Context(), opts)
		},
	}
	addStoreFlags(cmd, &opts.storeOptions)
	fl := cmd.Flags()
	fl.StringVar(&opts.Flow, "flow", "", "the flow `FILE` to audit (from hoist learn, compile or promote)")
	fl.StringVar(&opts.Domain, "domain", "", "audit only the sessions of this `DOMAIN`")
	addRuleFlags(fl, &opts.ruleOptions, true)
	fl.BoolVar(&opts.JSON, "json", false, "write the report as JSON")
	fl.StringVar(&opts.HTML, "html", "", "also write the report as an HTML page with a chart to `FILE`")
	fl.IntVar(&opts.Resamples, "resamples", audit.DefaultResamples, "bootstrap resamples of each interval")
	fl.Uint64Var(&opts.Seed, "seed", 1, "seed of the bootstrap")
	fl.BoolVar(&opts.Calibration, "calibration", false, "also print the decider's reliability table and expected calibration error")
	return cmd
}

func runAudit(ctx context.Context, o *auditOptions) error {
	f, err := flow.Load(o.Flow)
	if err != nil {
		return err
	}
	db, bad, err := openStore(ctx, o.IO, &o.storeOptions)
	if err != nil {
		return err
	}
	defer db.Close()
	opt := audit.Options{
		Rule:      o.rule(f),
		Caps:      o.caps(),
		Filter:    episode.Filter{Domain: o.Domain},
		Resamples: o.Resamples,
		Seed:      o.Seed,

		Calibration: o.Calibration,
	}
	rep, err := audit.Run(ctx, auditSource{db}, f, opt)
	if err != nil {
		return err
	}
	if rep.Episodes == 0 {
		return fmt.Errorf("no sessions to audit%s", domainHint(o.Domain))
	}
	if o.JSON {
		enc := json.NewEncoder(o.IO.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		writeAuditText(o.IO.Out, rep, o.Flow)
	}
	if rep.Total.Lookups == 0 && rep.Tasks == 1 && f.Folds > 1 {
		these := fmt.Sprintf("the %d sessions audited are one task (recorded in one host session, or under one --task-id)", rep.Episodes)
		if rep.Episodes == 1 {
			these = "the session audited is one task"
		}
		fmt.Fprintf(o.IO.Err, "note: 0 lookups: %s, and a task is served only the counts of the flow's folds that do not hold it; %s learned its counts in %d folds by task, so if it learned from these sessions it has none to serve them. Learn with --folds 1 to audit a flow on the sessions it learned from, or audit sessions of other tasks.\n",
			these, o.Flow, f.Folds)
	}
	if o.HTML != "" {
		var b strings.Builder
		writeAuditHTML(&b, rep, o.Flow)
		if err := atomicfile.WriteFile(o.HTML, []byte(b.String()), 0o600); err != nil {
			return err
		}
	}
	if bad {
		return badInputError()
	}
	return nil
}

// auditSource is the store as audit reads it: each episode with the
// decisions its flow logs hold, which judge a served session's lookups.
type auditSource struct{ *store.DB }

var _ audit.Logged = auditSource{}

func (s auditSource) Logged(ctx context.Context, f episode.Filter, fn func(*episode.Episode, []flow.Decision) error) error {
	return s.EpisodesWithFlows(ctx, f, func(ep *episode.Episode, fl *store.Flow) error {
		var ds []flow.Decision
		if fl != nil {
			for _, d := range fl.Decisions {
				ds = append(ds, d.FlowDecision)
			}
		}
		return fn(ep, ds)
	})
}

// countBounds writes a count, with its bounds when they differ: a served
// session's estimate (package earned).
func countBounds(n float64, b earned.Bounds, whole bool) string {
	v := fmt.Sprintf("%.1f", n)
	if whole {
		v = fmt.Sprintf("%.0f", n)
	}
	if b.Hi-b.Lo < 1e-9 {
		return v
	}
	return fmt.Sprintf("%.1f (%.1f–%.1f)", b.Est, b.Lo, b.Hi)
}

func pctOf(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

func interval(i *audit.Interval) string {
	if i == nil {
		return "-"
	}
	return fmt.Sprintf("%s (%s–%s)", pctOf(i.Value), pctOf(i.Lo), pctOf(i.Hi))
}

func writeAuditText(w io.Writer, r *audit.Report, name string) {
	fmt.Fprintf(w, "Audit of %s over %s, %s with tool calls (95%% intervals: %d bootstrap resamples over sessions)\n\n",
		name, plural(r.Episodes, "session", "sessions"), plural(r.Turns, "LLM turn", "LLM turns"), r.Resamples)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\tlookups\thits\tdetours\tprecision\tturns saved\tshare saved\tceiling: results\t+ constants\t+ conversation")
	line := func(row audit.Row) {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", row.Name, row.Lookups, countBounds(float64(row.Hits), row.HitBounds, true), row.Detours,
			interval(row.Precision), countBounds(row.Counts.Saved, row.SavedBounds, false), interval(&row.Saved), interval(row.Ceiling), interval(row.CeilingConst), interval(row.CeilingSaid))
	}
	line(r.Total)
	if len(r.Servers) > 0 {
		fmt.Fprintln(tw, "by server\t\t\t\t\t\t\t\t\t")
		for _, row := range r.Servers {
			line(row)
		}
	}
	if len(r.Sites) > 0 {
		fmt.Fprintln(tw, "by site\t\t\t\t\t\t\t\t\t")
		for _, row := range r.Sites {
			line(row)
		}
	}
	tw.Flush()
	if r.Served > 0 {
		fmt.Fprintf(w, "\n%d of the %d sessions served the flow: their lookups are the proxy's own. A log shows their hits and the\n"+
			"turns they saved only within bounds: each such count is an estimate, with its lower and upper bound in brackets\n"+
			"(lower: the agent used the answer; upper: it did not make the call again; docs/audit.md, \"Served sessions\").\n",
			r.Served, r.Episodes)
	}
	reach := r.Total.CeilingConst
	if r.Reaches == "conversation" {
		reach = r.Total.CeilingSaid
	}
	fmt.Fprintf(w, "\nA flow can reach the %s ceiling here (%s of turns)", r.Reaches, interval(reach))
	if r.Reaches != "conversation" {
		fmt.Fprint(w, "; the sessions logged no conversation (hoist-mcp --context)")
	}
	fmt.Fprintln(w, ".")
	if c := r.Calibration; c != nil {
		writeCalibration(w, c)
	}
}

// writeCalibration writes a reliability table.
func writeCalibration(w io.Writer, c *audit.Calibration) {
	fmt.Fprintf(w, "\nCalibration of the %s decider: %d offers, expected calibration error %.3f\n", c.Decider, c.Offers, c.ECE)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "probability\toffers\tmean probability\thit rate")
	for _, b := range c.Bins {
		if b.Offers == 0 {
			continue
		}
		fmt.Fprintf(tw, "%.1f–%.1f\t%d\t%.3f\t%.3f\n", b.Lo, b.Hi, b.Offers, b.MeanP, b.Rate)
	}
	tw.Flush()
}

// writeAuditHTML writes the report as a page with a chart of turns saved and
// detours per site: inline SVG, no script.
func writeAuditHTML(w io.Writer, r *audit.Report, name string) {
	e := html.EscapeString
	fmt.Fprintf(w, `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>hoist audit: %s</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse}
td,th{padding:.2em .8em;text-align:right}td:first-child,th:first-child{text-align:left}
tr:nth-child(even){background:#f4f4f4}.saved{fill:#2a9d5c}.detour{fill:#d1495b}</style></head><body>
<h1>hoist audit: %s</h1>
<p>%d sessions, %d LLM turns with tool calls. Turns saved: <b>%s</b> of all LLM turns; results ceiling %s; precision %s.
Intervals are 95%%, from %d bootstrap resamples over sessions.</p>
`, e(name), e(name), r.Episodes, r.Turns, e(interval(&r.Total.Saved)), e(interval(r.Total.Ceiling)), e(interval(r.Total.Precision)), r.Resamples)
	// The chart: per site, turns saved (green) and detours (red) on one scale.
	const rowH, labelW, barW = 22, 260, 420
	most := 1.0
	for _, s := range r.Sites {
		most = max(most, s.Counts.Saved, float64(s.Detours))
	}
	h := rowH*len(r.Sites) + 30
	fmt.Fprintf(w, "<h2>Turns saved and detours per site</h2>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"turns saved and detours per site\">\n", labelW+barW+80, h)
	fmt.Fprintf(w, "<rect class=\"saved\" x=\"%d\" y=\"4\" width=\"10\" height=\"10\"/><text x=\"%d\" y=\"13\">turns saved</text>", labelW, labelW+14)
	fmt.Fprintf(w, "<rect class=\"detour\" x=\"%d\" y=\"4\" width=\"10\" height=\"10\"/><text x=\"%d\" y=\"13\">detours</text>\n", labelW+110, labelW+124)
	for i, s := range r.Sites {
		y := 24 + i*rowH
		sw := int(float64(barW) * s.Counts.Saved / most)
		dw := int(float64(barW) * float64(s.Detours) / most)
		fmt.Fprintf(w, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>", labelW-6, y+14, e(s.Name))
		fmt.Fprintf(w, "<rect class=\"saved\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"8\"><title>%.1f turns saved</title></rect>", labelW, y+2, sw, s.Counts.Saved)
		fmt.Fprintf(w, "<rect class=\"detour\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"8\"><title>%d detours</title></rect>", labelW, y+11, dw, s.Detours)
		fmt.Fprintf(w, "<text x=\"%d\" y=\"%d\" font-size=\"11\">%.1f / %d</text>\n", labelW+max(sw, dw)+6, y+16, s.Counts.Saved, s.Detours)
	}
	fmt.Fprint(w, "</svg>\n<h2>Table</h2>\n<table><tr><th></th><th>lookups</th><th>hits</th><th>detours</th><th>precision</th><th>turns saved</th><th>share saved</th><th>results ceiling</th><th>+ constants</th><th>+ conversation</th></tr>\n")
	row := func(s audit.Row) {
		fmt.Fprintf(w, "<tr><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td><td>%.1f</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
			e(s.Name), s.Lookups, s.Hits, s.Detours, e(interval(s.Precision)), s.Counts.Saved, e(interval(&s.Saved)), e(interval(s.Ceiling)), e(interval(s.CeilingConst)), e(interval(s.CeilingSaid)))
	}
	row(r.Total)
	for _, s := range r.Servers {
		row(s)
	}
	for _, s := range r.Sites {
		row(s)
	}
	fmt.Fprint(w, "</table>\n</body></html>\n")
}
