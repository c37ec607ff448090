package mcpcli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/guards"
	"github.com/hoist-mcp/hoist/internal/oraclecli"
	"github.com/hoist-mcp/hoist/judge"
	"github.com/hoist-mcp/hoist/oracle/client"
	"github.com/hoist-mcp/hoist/proxy"
)

// judgeHelp is --help's paragraph on the confirmation judge.
const judgeHelp = `The confirmation judge. --confirm-judge log|enforce (with --guards and
--context) puts each write a confirmation rule checks to the System-One
model as well: did the customer's reply explicitly agree to this exact
change? It sees what the agent said last before the customer's last
message, that message and the call, as hoist confirm builds them, so the
two share cached answers. log records each judgment; enforce also refuses a
write whose P(yes) is below --confirm-threshold (0.5), telling the agent to
describe the change and ask first. A judge that cannot answer (no key, a
replay miss, an error, --confirm-questions spent) refuses nothing.
Each yes is an approval bound to the call: a digest of its method, tool and
arguments, the judge's policy version and a minute; the write is sent only
when its approval names it (docs/approvals.md). --confirm-second proposed
also asks whether the agent had proposed the change; --confirm-second-shadow only logs that answer. Judgments go to
--confirm-log (default <session>.confirm.jsonl beside the log). The
recommended setting: --confirm-judge enforce --confirm-second proposed
--confirm-second-shadow. --oracle jev (the default) asks a model over the
OpenAI-compatible protocol at --oracle-url (or HOIST_ORACLE_URL), model
--oracle-model, key in TYPESAFE_API_KEY or TYPESAFE_API_KEY_FILE; replay
answers from --oracle-cache alone; mock by a fixed rule, for trying.`

// judgeFlags are the confirmation judge's flags and the oracle's.
type judgeFlags struct {
	oracle       oraclecli.Flags
	mode         string
	threshold    float64
	second       string
	secondShadow bool
	questions    int
	log          string
}

// judgeFlagNames are the flags that need --confirm-judge.
var judgeFlagNames = []string{"confirm-threshold", "confirm-second", "confirm-second-shadow", "confirm-questions", "confirm-log"}

// oracleFlagNames are the oracle's flags, which need --confirm-judge or
// --flow.
var oracleFlagNames = []string{"oracle", "oracle-url", "oracle-model", "oracle-cache"}

func addJudgeFlags(fl *pflag.FlagSet, j *judgeFlags) {
	fl.StringVar(&j.mode, "confirm-judge", "", "also ask the System-One model whether the customer confirmed each write (`MODE`: log, or enforce to refuse the writes it fails; needs --guards and --context)")
	fl.Float64Var(&j.threshold, "confirm-threshold", judge.DefaultThreshold, "with --confirm-judge enforce, refuse a write whose P(yes) is below `P`")
	fl.StringVar(&j.second, "confirm-second", "", "also ask whether the agent had proposed the change (`Q`: proposed, or described for the older wording)")
	fl.BoolVar(&j.secondShadow, "confirm-second-shadow", false, "only log the second answer: a write fails on the first alone")
	fl.IntVar(&j.questions, "confirm-questions", proxy.DefaultConfirmQuestions, "at most `N` questions to the judge in one session")
	fl.StringVar(&j.log, "confirm-log", "", "append each judgment to `FILE` (default <session>.confirm.jsonl beside the log; {session} stands for the session)")
	j.oracle.Add(fl)
}

// validateJudge checks the judge's flags, after validateGuards, and sets
// o.Proxy.Guards.Judge without its oracle, which openJudge opens when the
// proxy starts.
func validateJudge(cmd *cobra.Command, o *options) error {
	j := &o.judge
	changed := cmd.Flags().Changed
	if j.mode == "" {
		for _, name := range judgeFlagNames {
			if changed(name) {
				return fmt.Errorf("--%s: needs --confirm-judge", name)
			}
		}
		if o.FlowFile == "" {
			for _, name := range oracleFlagNames {
				if changed(name) {
					return fmt.Errorf("--%s: needs --confirm-judge or --flow", name)
				}
			}
		}
		if err := j.oracle.Check(); err != nil {
			return err
		}
		return expandOracleCache(j)
	}
	if j.mode != "log" && j.mode != "enforce" {
		return fmt.Errorf("--confirm-judge: unknown mode %q: want log or enforce", j.mode)
	}
	if o.Proxy.Guards == nil {
		return errors.New("--confirm-judge: needs --guards: the judge checks the writes the guards' confirmation rules check")
	}
	if o.Proxy.Context == "" {
		return errors.New("--confirm-judge: needs --context: the judge reads the customer's reply in the conversation")
	}
	if !(j.threshold > 0 && j.threshold <= 1) { // NaN too
		return fmt.Errorf("--confirm-threshold %g: want a probability above 0, at most 1", j.threshold)
	}
	if m, ok := o.Proxy.Guards.Modes[o.Proxy.Domain+".confirmed"]; ok && m == guards.Off {
		return fmt.Errorf("--confirm-judge: --guard %s.confirmed=off turns off the rule whose writes the judge checks", o.Proxy.Domain)
	}
	opts := &proxy.JudgeOptions{Enforce: j.mode == "enforce", Questions: j.questions}
	opts.Judge.Threshold = j.threshold
	if j.second != "" {
		s, err := judge.ParseSecond(j.second)
		if err != nil {
			return fmt.Errorf("--confirm-second: %w", err)
		}
		opts.Judge.Second = s
	} else if j.secondShadow {
		return errors.New("--confirm-second-shadow: needs --confirm-second proposed or described")
	}
	opts.Judge.SecondShadow = j.secondShadow
	if j.questions < 0 {
		return fmt.Errorf("--confirm-questions %d: want 0 or more", j.questions)
	}
	if err := j.oracle.Check(); err != nil {
		return err
	}
	if j.log != "" {
		path, err := proxy.ExpandHome(j.log)
		if err != nil {
			return fmt.Errorf("--confirm-log: %w", err)
		}
		opts.Log = path
	}
	if err := expandOracleCache(j); err != nil {
		return err
	}
	o.Proxy.Guards.Judge = opts
	return nil
}

// expandOracleCache expands a leading ~ of --oracle-cache, for hosts that
// start hoist-mcp without a shell.
func expandOracleCache(j *judgeFlags) error {
	if j.oracle.Cache == "" {
		return nil
	}
	path, err := proxy.ExpandHome(j.oracle.Cache)
	if err != nil {
		return fmt.Errorf("--oracle-cache: %w", err)
	}
	j.oracle.Cache = path
	return nil
}

// openOracle opens one oracle and its cache for whoever asks it: the
// judge, when it is on, and the flow, when its arbiter weighs the model's
// answers and decides; and prunes the cache with --retain-days. It says
// once, on stderr, when jev cannot ask the model, rather than at every
// question.
func openOracle(o *options) error {
	g := o.Proxy.Guards
	judging := g != nil && g.Judge != nil
	asking := flowAsks(o)
	if !judging && !asking {
		return nil
	}
	warn := func(msg string) { fmt.Fprintln(o.IO.Err, "hoist-mcp: oracle: "+msg) }
	ask, cache, unavailable, err := o.judge.oracle.Open(warn, nil)
	if err != nil {
		return err
	}
	if unavailable != "" {
		var who []string
		if judging {
			who = append(who, "the confirmation judge refuses nothing it has no answer for")
		}
		if asking {
			who = append(who, "the flow's arbiter decides without the answers it lacks")
		}
		warn(fmt.Sprintf("the model cannot be asked (%s): answers come from the cache only; %s", unavailable, strings.Join(who, ", and ")))
	}
	if asking {
		o.Proxy.Flow.Oracle = proxy.FlowOracle{Oracle: ask}
	}
	if judging {
		g.Judge.Judge.Oracle = ask
	}
	return pruneCache(o, cache, warn)
}

// flowAsks reports whether the flow served asks the System-One model: its
// arbiter decides (the default for a flow with one) and weighs the
// model's answer in some fold.
func flowAsks(o *options) bool {
	fo := o.Proxy.Flow
	if fo == nil || fo.Flow == nil || fo.Flow.Arbiter == nil {
		return false
	}
	if d := fo.Rule.Decider; d != "" && d != flow.ArbiterDecider {
		return false
	}
	a := fo.Flow.Arbiter
	for f := -1; f < len(a.Folds); f++ {
		if a.OracleWeight(f) != 0 {
			return true
		}
	}
	return false
}

// pruneCache deletes the answers older than --retain-days.
func pruneCache(o *options, cache *client.Cache, warn func(string)) error {
	if cache != nil && o.Proxy.RetainDays > 0 {
		n, err := cache.Prune(time.Now().AddDate(0, 0, -o.Proxy.RetainDays))
		if err != nil {
			warn(fmt.Sprintf("pruning the cache: %v", err))
		} else if n > 0 {
			warn(fmt.Sprintf("deleted %d answer(s) older than %d days from %s", n, o.Proxy.RetainDays, cache.Dir()))
		}
	}
	return nil
}
