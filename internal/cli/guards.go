package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/guards"
	"github.com/hoist-mcp/hoist/internal/iostreams"
)

// guardsOptions are hoist guards' inputs.
type guardsOptions struct {
	IO iostreams.Streams
	trajectoryOptions
	// Modes are --guard ID=MODE, checked against the rules.
	Modes map[string]guards.Mode
	JSON  bool

	guardFlags []string
}

func newCmdGuards(f *Factory, runF func(context.Context, *guardsOptions) error) *cobra.Command {
	opts := &guardsOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "guards (--sessions DIR | --store PATH | --tau2 FILE...) [flags]",
		Short: "What the policy guards would refuse in recorded trajectories",
		Long: `hoist guards runs the policy guards of hoist-mcp --guards over recorded
trajectories, offline, exactly as the proxy checks each of the agent's
writes: before the write, from what the session had shown the agent by
then (tool results, the lookups a flow appended to them, and the
conversation), with every rule of the episode's domain (retail or airline).

It reports, per rule and in total: the writes checked, those the rule would
refuse, and those it lacked a fact for (a rule that lacks a fact lets the
write through). Each count is split by the episode's outcome: reward 1, the
task solved, where a refusal is a false alarm; reward below 1; and unknown,
for session logs without a .meta.json. The totals count a write once,
however many rules refuse it: over the rules enforced by default (or as
--guard sets them), and over every rule. Then it lists every write a rule
would refuse, with its episode, call and reason, so that a person can judge
each one. This is how to decide which rules to enforce: hoist-mcp --guard
RULE=enforce|log|off sets the same modes.

--tau2 FILE... reads τ²-bench results files, whose rewards are known;
--sessions DIR reads session logs recorded by hoist-mcp --record (their
rewards come from .meta.json files beside them). Only episodes of a domain
with guards are checked; --domain names the domain of episodes that name
none, and leaves out the others.

` + storeHelp + `

` + exitHelp,
		Example: `  # The τ²-bench results, with their rewards:
  hoist guards --tau2 results/retail-*.json results/airline-*.json

  # Sessions a proxy recorded, as JSON:
  hoist guards --sessions ~/.hoist/logs --domain retail --json

  # What the totals would be with the confirmation rule enforced:
  hoist guards --tau2 results/retail-gpt-4.1.json --guard retail.confirmed=enforce`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.checkTrajectoryArgs(args); err != nil {
				return err
			}
			modes, err := guards.ParseModes(opts.guardFlags)
			if err != nil {
				return &FlagError{fmt.Errorf("--guard %w", err)}
			}
			opts.Modes = modes
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runGuards(cmd.Context(), opts)
		},
	}
	addTrajectoryFlags(cmd, &opts.trajectoryOptions)
	fl := cmd.Flags()
	fl.StringArrayVar(&opts.guardFlags, "guard", nil, "set a rule's mode, as hoist-mcp --guard does (`RULE=enforce|log|off`; repeatable)")
	fl.BoolVar(&opts.JSON, "json", false, "write the report as JSON")
	return cmd
}

func runGuards(ctx context.Context, o *guardsOptions) error {
	rep := &guards.Report{}
	session := func(domain string) (*guards.Session, error) {
		return guards.NewSession(guards.Config{Domain: domain, Modes: modesOf(o.Modes, domain)})
	}
	bad, err := eachTrajectory(ctx, o.IO, &o.trajectoryOptions, session, func(ep *episode.Episode, s *guards.Session) error {
		rep.AddRules(s)
		checkEpisode(rep, s, ep)
		return nil
	})
	if err != nil {
		return err
	}
	if rep.Episodes.All == 0 {
		return fmt.Errorf("no episodes to check%s (the guards know retail and airline)", domainHint(o.Domain))
	}
	if o.JSON {
		if err := writeJSON(o.IO.Out, rep); err != nil {
			return err
		}
	} else {
		writeGuardsText(o.IO.Out, rep)
	}
	if bad {
		return badInputError()
	}
	return nil
}

// modesOf keeps the modes of one domain's rules.
func modesOf(all map[string]guards.Mode, domain string) map[string]guards.Mode {
	out := map[string]guards.Mode{}
	for id, m := range all {
		if strings.HasPrefix(id, domain+".") {
			out[id] = m
		}
	}
	return out
}

// checkEpisode runs a session's rules over one episode, in its order: the
// conversation and every result feed the facts, and each of the agent's
// writes is checked before its result, as the proxy checks it before the
// server sees it. The proxy's own calls (a flow's lookups) are facts, not
// writes to check; a write is counted as sent, since it was.
func checkEpisode(rep *guards.Report, s *guards.Session, ep *episode.Episode) {
	g := guards.GroupOf(ep.Reward)
	rep.AddEpisode(g)
	type checked struct {
		c     *episode.Call
		check guards.Check
	}
	var writes []checked
	walkWrites(s, ep, func(c *episode.Call, check guards.Check) { writes = append(writes, checked{c, check}) })
	// Each write is counted once its outcome is known: whether the server
	// carried it out, failed it, or never saw it (the proxy refused it).
	for _, w := range writes {
		fate := guards.FateOf(false, "", false)
		if r := w.c.Result; r != nil {
			fate = guards.FateOf(true, r.Text, r.IsError)
		}
		rep.AddCheck(g, guards.Where{Episode: ep.ID, TaskID: ep.TaskID, Reward: ep.Reward, Call: w.c.Index, ID: w.c.ID}, w.check, w.c.Args, fate)
	}
}

func writeGuardsText(w io.Writer, r *guards.Report) {
	fmt.Fprintf(w, "Policy guards over %d episodes (%d reward 1, %d reward below 1, %d unknown), %d writes\n\n",
		r.Episodes.All, r.Episodes.Reward1, r.Episodes.Below1, r.Episodes.Unknown, r.Writes.All)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "rule\tmode\tchecked\twould refuse\tlacked facts\treward 1: refused\tserver did\treward < 1: refused\tserver did\tunknown: refused")
	row := func(name, mode string, t guards.Tally) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", name, mode, t.Checked.All, t.Refused.All, t.Lacked.All,
			share(t.Refused.Reward1, t.Checked.Reward1), share(t.RefusedDone.Reward1, t.Checked.Reward1),
			share(t.Refused.Below1, t.Checked.Below1), share(t.RefusedDone.Below1, t.Checked.Below1),
			share(t.Refused.Unknown, t.Checked.Unknown))
	}
	for _, rt := range r.Rules {
		row(rt.Rule, string(rt.Mode), rt.Tally)
	}
	row("total, enforced rules", "", r.Enforced)
	row("total, every rule", "", r.Every)
	tw.Flush()
	if len(r.Refusals) == 0 {
		fmt.Fprintln(w, "\nNo write would be refused.")
		return
	}
	fmt.Fprintf(w, "\nWrites a rule would refuse (%d):\n", len(r.Refusals))
	for _, f := range r.Refusals {
		mode := "logged"
		if f.Enforced {
			mode = "enforced"
		}
		mode += ", " + fateWords[f.Fate]
		reward := "reward unknown"
		if f.Reward != nil {
			reward = fmt.Sprintf("reward %g", *f.Reward)
		}
		task := ""
		if f.TaskID != "" {
			task = " task " + f.TaskID + ","
		}
		fmt.Fprintf(w, "\n  %s (%s,%s %s) call %d: %s %s\n    %s\n", f.Rule, mode, task, reward, f.Call, f.Tool, clipArgs(f.Args, 300), f.Reason)
		fmt.Fprintf(w, "    in %s\n", f.Episode)
	}
}

// fateWords say what became of a write a rule would refuse.
var fateWords = map[guards.Fate]string{
	guards.ServerDid:    "the server did it",
	guards.ServerFailed: "failed at the server",
	guards.ProxyRefused: "refused by the proxy",
	guards.NoAnswer:     "never answered",
}

// share writes n of total as "n/total (p%)", or "-" when total is 0.
func share(n, total int) string {
	if total == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d (%.1f%%)", n, total, 100*float64(n)/float64(total))
}

func clipArgs(a json.RawMessage, max int) string {
	s := string(a)
	if s == "" {
		s = "{}"
	}
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return s
}
