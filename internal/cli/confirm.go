package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/guards"
	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/internal/oraclecli"
	"github.com/hoist-mcp/hoist/judge"
	"github.com/hoist-mcp/hoist/oracle"
)

// confirmOptions are hoist confirm's inputs.
type confirmOptions struct {
	IO iostreams.Streams
	trajectoryOptions
	Oracle       oraclecli.Flags
	Threshold    float64
	Second       judge.Second
	SecondShadow bool
	Parallel     int
	JSON         bool

	second string
	getenv func(string) string
}

func newCmdConfirm(f *Factory, runF func(context.Context, *confirmOptions) error) *cobra.Command {
	opts := &confirmOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "confirm (--sessions DIR | --store PATH | --tau2 FILE...) [flags]",
		Short: "Ask the confirmation judge about recorded writes, offline",
		Long: `hoist confirm asks the confirmation judge of hoist-mcp --confirm-judge
its question about each write of recorded trajectories, offline: did the
customer's reply explicitly agree to this exact change? The question is
built as the proxy builds it, from what the agent said last before the
customer's last message, that message and the call, so the answers land in
the same cache and a proxy judging the same moment asks nothing new. The
writes asked about are those the guards' confirmation rules check
(retail.confirmed, airline.confirmed); the rules' word list's verdict is
shown beside the judge's.

It reports each write's answers, and in total how many writes the judge
would refuse (P(yes) below --confirm-threshold), split by the episode's
outcome as hoist guards splits it: in episodes of reward 1, where the task
was solved, a refusal is most likely a false alarm. A question the judge
cannot answer is counted apart and refuses nothing, as in the proxy.

` + oraclecli.Help + `

` + storeHelp + `

` + exitHelp,
		Example: `  # Try it with no model (the mock's fixed rule):
  hoist confirm --tau2 results/retail-gpt-4.1.json --oracle mock

  # A model served on this machine, with the second question:
  TYPESAFE_API_KEY_FILE=~/.jev-key hoist confirm --tau2 results/*.json \
      --oracle-url http://127.0.0.1:8000/v1 --oracle-model jev-1 --confirm-second proposed

  # Again, from the answers cached the first time, as JSON:
  hoist confirm --tau2 results/*.json --oracle replay --oracle-model jev-1 --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.checkTrajectoryArgs(args); err != nil {
				return err
			}
			if err := opts.Oracle.Check(); err != nil {
				return &FlagError{err}
			}
			if !(opts.Threshold > 0 && opts.Threshold <= 1) { // NaN too
				return &FlagError{fmt.Errorf("--confirm-threshold %g: want a probability above 0, at most 1", opts.Threshold)}
			}
			if opts.second != "" {
				s, err := judge.ParseSecond(opts.second)
				if err != nil {
					return &FlagError{fmt.Errorf("--confirm-second: %w", err)}
				}
				opts.Second = s
			} else if opts.SecondShadow {
				return &FlagError{fmt.Errorf("--confirm-second-shadow: needs --confirm-second proposed or described")}
			}
			if opts.Parallel < 1 {
				return &FlagError{fmt.Errorf("--parallel %d: want 1 or more", opts.Parallel)}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runConfirm(cmd.Context(), opts)
		},
	}
	addTrajectoryFlags(cmd, &opts.trajectoryOptions)
	opts.Oracle.Add(cmd.Flags())
	fl := cmd.Flags()
	fl.Float64Var(&opts.Threshold, "confirm-threshold", judge.DefaultThreshold, "a write whose P(yes) is below `P` would be refused")
	fl.StringVar(&opts.second, "confirm-second", "", "also ask the second question: proposed (had the agent proposed this change?) or described (`Q`)")
	fl.BoolVar(&opts.SecondShadow, "confirm-second-shadow", false, "count the second answer apart: a write would be refused on the first alone")
	fl.IntVar(&opts.Parallel, "parallel", 4, "ask at most `N` questions at once")
	fl.BoolVar(&opts.JSON, "json", false, "write the report as JSON")
	return cmd
}

// confirmReport is hoist confirm's report.
type confirmReport struct {
	Oracle    string  `json:"oracle"`
	Model     string  `json:"model,omitempty"`
	Threshold float64 `json:"threshold"`
	Second    string  `json:"second,omitempty"`
	Shadow    bool    `json:"second_shadow,omitempty"`
	// Episodes are the episodes read; Writes the writes a confirmation
	// rule checks, each asked about; GuardsRefused those an enforced rule
	// refuses first, which the judge is not asked about, as in the proxy.
	Episodes      guards.Split `json:"episodes"`
	Writes        guards.Split `json:"writes"`
	GuardsRefused guards.Split `json:"guards_refused"`
	// Answered counts the writes whose first question got an answer;
	// WouldRefuse those the judge would refuse; WordList those the word
	// list would refuse, for comparison.
	Answered    guards.Split `json:"answered"`
	WouldRefuse guards.Split `json:"would_refuse"`
	// WouldRefuseDone are those of WouldRefuse the server carried out in
	// the recording: in an episode of reward 1, a write that helped.
	WouldRefuseDone guards.Split `json:"would_refuse_server_did"`
	WordList        guards.Split `json:"word_list_refuses"`
	// Proposal counts the writes the proposal check flags: a value of the
	// call of which the exchange named another (logged only, no model).
	Proposal guards.Split `json:"proposal_check_flags"`
	// Unanswered counts the first questions left without an answer, by why.
	Unanswered map[oracle.Why]int `json:"unanswered,omitempty"`
	Judgments  []judgment         `json:"writes_judged"`
}

// judgment is one write and the judge's answers about it.
type judgment struct {
	Episode     string          `json:"episode"`
	TaskID      string          `json:"task_id,omitempty"`
	Reward      *float64        `json:"reward"`
	Call        int             `json:"call"`
	Tool        string          `json:"tool"`
	Args        json.RawMessage `json:"arguments"`
	Rule        string          `json:"rule"`
	AgentSaid   string          `json:"agent_said,omitempty"`
	UserSaid    string          `json:"user_said,omitempty"`
	WordList    guards.Outcome  `json:"word_list"`
	First       answer          `json:"first"`
	Second      *answer         `json:"second,omitempty"`
	WouldRefuse bool            `json:"would_refuse"`
	ServerDid   bool            `json:"server_did"`
	// ProposalCheck lists the call's values of which the exchange named
	// another (judge.ProposalCheck).
	ProposalCheck []judge.Mismatch `json:"proposal_check,omitempty"`

	group guards.Group
	tool  string
	args  json.RawMessage
	conf  guards.Confirmation
}

// answer is an oracle answer as the report shows it.
type answer struct {
	Key      string        `json:"key"`
	Answered bool          `json:"answered"`
	PYes     *float64      `json:"p_yes,omitempty"`
	From     oracle.Source `json:"from,omitempty"`
	Cached   bool          `json:"cached,omitempty"`
	Why      oracle.Why    `json:"why,omitempty"`
	Reason   string        `json:"reason,omitempty"`
}

func answerOf(a oracle.Answer) answer {
	out := answer{Key: a.Key, Answered: a.Answered, From: a.From, Cached: a.Cached, Why: a.Why, Reason: a.Reason}
	if a.Answered {
		p := a.PYes
		out.PYes = &p
	}
	return out
}

func runConfirm(ctx context.Context, o *confirmOptions) error {
	o.Oracle.Mode = strings.TrimSpace(o.Oracle.Mode)
	warn := func(msg string) { fmt.Fprintln(o.IO.Err, "hoist: "+msg) }
	ask, _, unavailable, err := o.Oracle.Open(warn, o.getenv)
	if err != nil {
		return err
	}
	if unavailable != "" && !o.Quiet {
		fmt.Fprintf(o.IO.Err, "hoist: the model cannot be asked (%s); answers come from the cache only\n", unavailable)
	}
	rep := &confirmReport{Oracle: o.Oracle.Mode, Model: o.Oracle.Model, Threshold: o.Threshold, Second: string(o.Second), Shadow: o.SecondShadow, Unanswered: map[oracle.Why]int{}}
	newSession := func(domain string) (*guards.Session, error) {
		return guards.NewSession(guards.Config{Domain: domain})
	}
	bad, err := eachTrajectory(ctx, o.IO, &o.trajectoryOptions, newSession, func(ep *episode.Episode, s *guards.Session) error {
		g := guards.GroupOf(ep.Reward)
		rep.Episodes.Add(g)
		walkWrites(s, ep, func(c *episode.Call, check guards.Check) {
			if check.Confirmation == nil {
				return
			}
			if check.Refused != nil {
				// The proxy asks the judge nothing about a write an
				// enforced rule refuses: nor does hoist confirm.
				rep.GuardsRefused.Add(g)
				return
			}
			j := judgment{Episode: ep.ID, TaskID: ep.TaskID, Reward: ep.Reward, Call: c.Index, Tool: c.Tool, Args: c.Args,
				AgentSaid: check.Confirmation.AgentSaid, UserSaid: check.Confirmation.UserSaid,
				ServerDid:     c.Result != nil && !c.Result.IsError,
				ProposalCheck: judge.ProposalCheck(*check.Confirmation, c.Args),
				group:         g, tool: c.Tool, args: c.Args, conf: *check.Confirmation}
			for _, v := range check.Verdicts {
				if strings.HasSuffix(v.Rule, ".confirmed") {
					j.Rule, j.WordList = v.Rule, v.Outcome
				}
			}
			rep.Judgments = append(rep.Judgments, j)
		})
		return nil
	})
	if err != nil {
		return err
	}
	if len(rep.Judgments) == 0 {
		return fmt.Errorf("no writes to judge%s: none is checked for a confirmation (the judge needs the conversation: τ²-bench results, or sessions recorded with --context)", domainHint(o.Domain))
	}
	jd := judge.Judge{Oracle: ask, Threshold: o.Threshold, Second: o.Second, SecondShadow: o.SecondShadow}
	if err := askAll(ctx, o, jd, rep.Judgments); err != nil {
		return err
	}
	for i := range rep.Judgments {
		j := &rep.Judgments[i]
		rep.Writes.Add(j.group)
		if j.First.Answered {
			rep.Answered.Add(j.group)
		} else {
			rep.Unanswered[j.First.Why]++
		}
		if j.WouldRefuse {
			rep.WouldRefuse.Add(j.group)
			if j.ServerDid {
				rep.WouldRefuseDone.Add(j.group)
			}
		}
		if j.WordList == guards.Refuse {
			rep.WordList.Add(j.group)
		}
		if len(j.ProposalCheck) > 0 {
			rep.Proposal.Add(j.group)
		}
	}
	if o.JSON {
		if err := writeJSON(o.IO.Out, rep); err != nil {
			return err
		}
	} else {
		writeConfirmText(o.IO.Out, rep)
	}
	if bad {
		return badInputError()
	}
	return nil
}

// askAll asks the judge about every write, o.Parallel at a time, and says
// how far it got on stderr when there are many to ask.
func askAll(ctx context.Context, o *confirmOptions, jd judge.Judge, js []judgment) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		done int
		next = make(chan int)
	)
	// Progress at most once a second: a mock or a warm cache answers at
	// once and says nothing; a model that takes its time is followed.
	last := time.Now()
	for w := 0; w < o.Parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				j := &js[i]
				v := jd.Ask(ctx, j.tool, j.args, j.conf)
				j.First, j.WouldRefuse = answerOf(v.First), v.Fails
				if v.Second != nil {
					a := answerOf(*v.Second)
					j.Second = &a
				}
				mu.Lock()
				done++
				if now := time.Now(); !o.Quiet && now.Sub(last) >= time.Second && done < len(js) {
					last = now
					fmt.Fprintf(o.IO.Err, "hoist: judged %d of %d writes\n", done, len(js))
				}
				mu.Unlock()
			}
		}()
	}
	for i := range js {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return ctx.Err()
}

func writeConfirmText(w io.Writer, r *confirmReport) {
	second := ""
	if r.Second != "" {
		second = ", second question " + r.Second
		if r.Shadow {
			second += " (shadow)"
		}
	}
	model := ""
	if r.Model != "" {
		model = " (model " + r.Model + ")"
	}
	fmt.Fprintf(w, "Confirmation judge over %d episodes, %d writes asked about; oracle %s%s, threshold %g%s\n\n",
		r.Episodes.All, r.Writes.All, r.Oracle, model, r.Threshold, second)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "outcome\twrites\tanswered\tjudge would refuse\tof which the server did\tword list would refuse\tproposal check flags")
	for _, g := range []struct {
		name string
		g    guards.Group
	}{{"reward 1", guards.Reward1}, {"reward < 1", guards.Below1}, {"unknown", guards.Unknown}, {"all", ""}} {
		of := func(s guards.Split) int {
			if g.g == "" {
				return s.All
			}
			return s.Of(g.g)
		}
		n := of(r.Writes)
		if g.g != "" && n == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", g.name, n, share(of(r.Answered), n), share(of(r.WouldRefuse), n),
			share(of(r.WouldRefuseDone), n), share(of(r.WordList), n), share(of(r.Proposal), n))
	}
	tw.Flush()
	if n := r.GuardsRefused.All; n > 0 {
		fmt.Fprintf(w, "\n%d more writes an enforced guard refuses first were not asked about, as the proxy does not ask.\n", n)
	}
	if len(r.Unanswered) > 0 {
		var whys []string
		for why, n := range r.Unanswered {
			whys = append(whys, fmt.Sprintf("%d %s", n, why))
		}
		sort.Strings(whys)
		fmt.Fprintf(w, "\nUnanswered (refusing nothing): %s\n", strings.Join(whys, ", "))
	}
	fmt.Fprintln(w, "\nWrites:")
	for _, j := range r.Judgments {
		reward := "reward unknown"
		if j.Reward != nil {
			reward = fmt.Sprintf("reward %g", *j.Reward)
		}
		task := ""
		if j.TaskID != "" {
			task = "task " + j.TaskID + ", "
		}
		verdict := "would go on"
		if j.WouldRefuse {
			verdict = "WOULD REFUSE"
		}
		fmt.Fprintf(w, "\n  %s%s, call %d: %s %s\n", task, reward, j.Call, j.Tool, clipArgs(j.Args, 200))
		fmt.Fprintf(w, "    agent said:    %s\n    customer said: %s\n", clipQuoteText(j.AgentSaid, 160), clipQuoteText(j.UserSaid, 160))
		line := fmt.Sprintf("    word list %s; judge %s", j.WordList, answerText(j.First))
		if j.Second != nil {
			line += fmt.Sprintf("; %s %s", r.Second, answerText(*j.Second))
		}
		fmt.Fprintf(w, "%s: %s\n", line, verdict)
		for _, m := range j.ProposalCheck {
			fmt.Fprintf(w, "    proposal check: %s is %s, the exchange named %s\n", m.Argument, m.Value, strings.Join(m.Named, ", "))
		}
		fmt.Fprintf(w, "    in %s\n", j.Episode)
	}
}

func answerText(a answer) string {
	if !a.Answered {
		return "no answer (" + string(a.Why) + ")"
	}
	s := fmt.Sprintf("p_yes %.2f", *a.PYes)
	if a.Cached {
		s += " (cached)"
	}
	return s
}

// clipQuoteText quotes text on one line, cut to at most max runes.
func clipQuoteText(text string, max int) string {
	text = strings.Join(strings.Fields(text), " ")
	if r := []rune(text); len(r) > max {
		text = string(r[:max]) + "…"
	}
	return fmt.Sprintf("%q", text)
}
