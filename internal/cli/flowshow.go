package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/internal/iostreams"
)

// flowShowOptions are hoist flow-show's inputs.
type flowShowOptions struct {
	IO     iostreams.Streams
	File   string
	Format string
	ruleOptions
	TaskID string
	All    bool
}

func newCmdFlowShow(f *Factory, runF func(context.Context, *flowShowOptions) error) *cobra.Command {
	opts := &flowShowOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "flow-show FILE [flags]",
		Short: "Render a flow for review: what it would look up, and what it never would",
		Long: `hoist flow-show renders a flow (from hoist learn or hoist compile) for a
person to review before serving it. For each site, most frequent first, it
lists the lookups the flow would make at the threshold, ranked, each with
P(reach) and P(habit), the binding of each argument, how often that binding
reproduced the agent's own arguments (match rate) and the support behind
it; then the lookups it would not make and why (below the threshold, no
binding with enough support, a site seen too rarely), and the tools it never
calls (writes, tools without readOnlyHint).

A flow with an arbiter shows its weights and out-of-fold calibration, and
each lookup's P(arbiter); a lookup with a predicate shows P(reach) where it
holds and where it does not; one whose results are large, the threshold
their size gives it.

The threshold and decider are hoist-mcp's (--flow-threshold, --flow-decider);
--task-id shows what a task would be served, without the counts of its own
fold.

--format text (the default) is for a terminal or a pipe, markdown for a
pull request, json for scripts (the same on a terminal and in a pipe), and
dot a Graphviz graph of sites and lookups (dot -Tsvg).`,
		Example: `  hoist flow-show retail.flow.json
  hoist flow-show retail.flow.json --threshold 0.5 --decider habit
  hoist flow-show retail.flow.json --format dot | dot -Tsvg > retail.svg`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = args[0]
			switch opts.Format {
			case "text", "markdown", "md", "json", "dot":
			default:
				return &FlagError{fmt.Errorf("--format %q: want text, markdown, json or dot", opts.Format)}
			}
			if err := opts.ruleOptions.check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runFlowShow(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Format, "format", "text", "output `FORMAT`: text, markdown, json or dot")
	addRuleFlags(fl, &opts.ruleOptions, false)
	fl.StringVar(&opts.TaskID, "task-id", "", "show what this task is served (its own fold's counts left out)")
	fl.BoolVar(&opts.All, "all", false, "also list sites with no lookup")
	return cmd
}

func runFlowShow(_ context.Context, o *flowShowOptions) error {
	f, err := flow.Load(o.File)
	if err != nil {
		return err
	}
	fold := -1
	if o.TaskID != "" {
		fold = flow.FoldOf(o.TaskID, f.Folds)
	}
	rev := f.Review(flow.ServedRule(f, o.rule(f)), fold)
	w := o.IO.Out
	switch o.Format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(rev)
	case "dot":
		return showDot(w, rev)
	case "markdown", "md":
		return showMarkdown(w, o.File, rev, o.All)
	}
	return showText(w, o.File, rev, o.All)
}

func siteName(s flow.SiteReview) string {
	if s.Failed {
		return s.Tool + " (failed)"
	}
	return s.Tool
}

func foldNote(rev *flow.Review) string {
	if rev.Fold < 0 {
		return "all folds"
	}
	return fmt.Sprintf("fold %d left out", rev.Fold)
}

func showText(w io.Writer, file string, rev *flow.Review, all bool) error {
	fmt.Fprintf(w, "%s: domain %s, %d episodes; decider %s, threshold %.2f, %s\n", file, orNone(rev.Domain), rev.Episodes, rev.Rule.Decider, rev.Rule.Threshold, foldNote(rev))
	fmt.Fprintf(w, "%d lookups after %d of %d sites\n", rev.Lookups, rev.SitesAct, len(rev.Sites))
	if a := rev.Arbiter; a != nil {
		fmt.Fprintf(w, "%s\n", arbiterLine(a))
	}
	for _, s := range rev.Sites {
		if len(s.Lookups) == 0 && !all {
			continue
		}
		fmt.Fprintf(w, "\nafter %s (seen %d)", siteName(s), s.Support)
		if !s.Served {
			fmt.Fprintf(w, ": not served, %s", s.Why)
		}
		fmt.Fprintln(w)
		for _, l := range s.Lookups {
			mark := "  look up "
			if !l.Act {
				mark = "  never   "
			}
			fmt.Fprintf(w, "%s%-28s P(reach) %.2f  P(habit) %.2f", mark, l.Tool, l.PReach, l.PHabit)
			if rev.Arbiter != nil {
				fmt.Fprintf(w, "  P(arbiter) %.2f", l.PArbiter)
			}
			if l.Binding != nil {
				fmt.Fprintf(w, "  binding %s matched %d/%d%s (%.2f)", flow.BindingString(l.Binding), l.Matched, l.Of, callsNote(l), l.PBinding)
			}
			if l.When != "" {
				fmt.Fprintf(w, "  when %s: P(reach) %.2f, else %.2f", l.When, l.PWhenHeld, l.PWhenNot)
			}
			if len(l.Cues) > 0 {
				fmt.Fprintf(w, "  only where said: %s", strings.Join(l.Cues, ", "))
			}
			if l.Threshold > rev.Rule.Threshold {
				fmt.Fprintf(w, "  results of %.0f B: threshold %.2f", l.MeanBytes, l.Threshold)
			}
			if !l.Act {
				fmt.Fprintf(w, "  [%s]", l.Why)
			}
			fmt.Fprintln(w)
		}
	}
	if len(rev.Never) > 0 {
		fmt.Fprintf(w, "\nnever called by the flow:\n")
		for _, t := range rev.Never {
			fmt.Fprintf(w, "  %-30s %s\n", t.Tool, t.Why)
		}
	}
	return nil
}

// arbiterLine describes a flow's arbiter: its weights by input, and how
// well calibrated it was out of fold.
func arbiterLine(a *flow.Arbiter) string {
	var parts []string
	for i, name := range a.Features {
		parts = append(parts, fmt.Sprintf("%s %+.2f", name, a.Weights[i]))
	}
	return fmt.Sprintf("arbiter: %s; fitted on %d offers (%d hits), out-of-fold ECE %.3f, log loss %.3f",
		strings.Join(parts, ", "), a.Fit.Offers, a.Fit.Hits, a.Fit.ECE, a.Fit.LogLoss)
}

// callsNote says that a fan-out's match rate counts calls, not occurrences.
func callsNote(l flow.LookupReview) string {
	if l.FanOut {
		return " calls"
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func mdCell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

func showMarkdown(w io.Writer, file string, rev *flow.Review, all bool) error {
	fmt.Fprintf(w, "# Flow `%s`\n\n", file)
	fmt.Fprintf(w, "Domain %s, %d episodes. Decider **%s**, threshold **%.2f**, %s: **%d lookups** after %d of %d sites.\n",
		orNone(rev.Domain), rev.Episodes, rev.Rule.Decider, rev.Rule.Threshold, foldNote(rev), rev.Lookups, rev.SitesAct, len(rev.Sites))
	if a := rev.Arbiter; a != nil {
		fmt.Fprintf(w, "\n%s.\n", mdCell(arbiterLine(a)))
	}
	for _, s := range rev.Sites {
		if len(s.Lookups) == 0 && !all {
			continue
		}
		fmt.Fprintf(w, "\n## After `%s` (seen %d)\n\n", siteName(s), s.Support)
		if !s.Served {
			fmt.Fprintf(w, "Not served: %s.\n\n", s.Why)
		}
		if len(s.Lookups) == 0 {
			fmt.Fprintf(w, "No lookups.\n")
			continue
		}
		fmt.Fprintf(w, "| | lookup | P(reach) | P(habit) | binding | matched | why not |\n|---|---|---|---|---|---|---|\n")
		for _, l := range s.Lookups {
			act := "✓"
			if !l.Act {
				act = "✗"
			}
			b, m := "", ""
			if l.Binding != nil {
				b = "`" + mdCell(flow.BindingString(l.Binding)) + "`"
				m = fmt.Sprintf("%d/%d%s (%.2f)", l.Matched, l.Of, callsNote(l), l.PBinding)
			}
			fmt.Fprintf(w, "| %s | `%s` | %.2f | %.2f | %s | %s | %s |\n", act, l.Tool, l.PReach, l.PHabit, b, m, mdCell(l.Why))
		}
	}
	if len(rev.Never) > 0 {
		fmt.Fprintf(w, "\n## Never called by the flow\n\n")
		for _, t := range rev.Never {
			fmt.Fprintf(w, "- `%s`: %s\n", t.Tool, t.Why)
		}
	}
	return nil
}

func dotQuote(s string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) + `"`
}

func showDot(w io.Writer, rev *flow.Review) error {
	fmt.Fprintf(w, "digraph flow {\n  rankdir=LR;\n  node [shape=box, fontname=\"Helvetica\"];\n  edge [fontname=\"Helvetica\", fontsize=10];\n")
	fmt.Fprintf(w, "  label=%s;\n", dotQuote(fmt.Sprintf("%s: %s, threshold %.2f", orNone(rev.Domain), rev.Rule.Decider, rev.Rule.Threshold)))
	nodes := map[string]bool{}
	node := func(name string, attrs string) {
		if !nodes[name] {
			nodes[name] = true
			fmt.Fprintf(w, "  %s%s;\n", dotQuote(name), attrs)
		}
	}
	for _, s := range rev.Sites {
		if len(s.Lookups) == 0 {
			continue
		}
		attrs := ""
		if s.Failed {
			attrs = " [color=red]"
		}
		node(siteName(s), attrs)
		for _, l := range s.Lookups {
			node(l.Tool, "")
			label := fmt.Sprintf("%.2f", l.Score)
			if l.Binding != nil {
				label += "\\n" + flow.BindingString(l.Binding)
			}
			style := ""
			if !l.Act {
				style = ", style=dashed, color=gray"
			}
			fmt.Fprintf(w, "  %s -> %s [label=%s%s];\n", dotQuote(siteName(s)), dotQuote(l.Tool), strings.ReplaceAll(dotQuote(label), `\\n`, `\n`), style)
		}
	}
	for _, t := range rev.Never {
		node(t.Tool, " [style=filled, fillcolor=\"#eeeeee\"]")
	}
	fmt.Fprintln(w, "}")
	return nil
}
