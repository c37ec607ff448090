package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/audit"
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/ingest"
	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/procedure"
	"github.com/hoist-mcp/hoist/store"
)

// replayOptions are hoist replay's inputs.
type replayOptions struct {
	IO iostreams.Streams
	storeOptions
	Tau2      []string
	Tools     string
	Flow      string
	Domain    string
	World     []string
	Proxy     string
	Out       string
	Parallel  int
	TimeScale float64
	ruleOptions
	Timeout time.Duration
	JSON    bool
}

// DefaultReplayParallel is how many episodes hoist replay plays at once:
// each is mostly waiting (think time, the world), so more than the cores.
const DefaultReplayParallel = 8

func newCmdReplay(f *Factory, runF func(context.Context, *replayOptions) error) *cobra.Command {
	opts := &replayOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "replay --flow FILE (--sessions DIR | --store PATH | --tau2 FILE...) [flags] -- WORLD_COMMAND [ARGS...]",
		Short: "What serving a flow saves live: recorded agents replayed through hoist-mcp --flow",
		Long: `hoist replay measures a flow live. It plays back the agent of each recorded
episode (hoist-procedure replay: its LLM turns in order, each turn's calls
with their recorded arguments, the time between them, the conversation
written for --context) through hoist-mcp --flow FILE in front of the world
(the command after --, such as hoist-mcp-demo --world tau2-retail), one
proxy and one world per episode, several at a time (--parallel). A call is
skipped when a lookup the proxy appended already answered it since the
agent's last write, and a turn when all its calls were: so the proxy's
decisions, its lookups against live results, the writes that change what
later reads return, and the timing all take part.

Each episode is served its own task's fold (--task-id), as hoist audit
serves it, and audited offline too, with the same flow and rule. The report
gives per domain the LLM turns saved live, as a share of all LLM turns (the
model's responses, with or without calls) and of the turns that call tools,
the proxy's lookups and their precision (the share a later call of the
agent's used), and beside them hoist audit's offline figures for the same
episodes. Per episode it says whether live and offline saved the same turns,
and how many reads came back as recorded (fields compared as JSON values).
The proxy records each session (in --out DIR/live, else a temporary
directory); its LLM turns, inferred from timing as for any recorded session,
are checked against the turns the replay made.

Episodes come from the store (--sessions DIR ingests DIR first, as every
command does) or from τ²-bench results files (--tau2, with the tools' kinds
from --tools or else the flow).

--time-scale F waits F times the recorded time between turns (1, as
recorded; 0.1 plays ten times as fast; 0 not at all, which leaves turn
inference nothing to tell turns apart by).

` + storeHelp + `

Exit codes: 0 done; 1 an episode's replay failed (named on stderr; the
others are still reported); 2 bad flags or arguments; 3 done, but some
input was bad.`,
		Example: `  # τ²-bench's retail logs, through a flow learned with folds, against τ²-bench's database:
  hoist learn --sessions logs/retail --domain retail --folds 5 --out retail.flow.json
  hoist replay --flow retail.flow.json --sessions logs/retail --time-scale 0.1 \
      -- hoist-mcp-demo --world tau2-retail

  # A results file, with the JSON report:
  hoist replay --flow retail.flow.json --tau2 results/retail-gpt-4.1.json --json \
      -- hoist-mcp-demo --world tau2-retail`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			positional := args
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				positional, opts.World = args[:dash], args[dash:]
			}
			switch {
			case len(positional) > 0:
				return &FlagError{fmt.Errorf("unexpected argument %q: put the world's command after --", positional[0])}
			case len(opts.World) == 0:
				return &FlagError{errors.New("no world: put its command after --, such as -- hoist-mcp-demo --world tau2-retail")}
			case opts.Flow == "":
				return &FlagError{errors.New("--flow: name the flow to serve")}
			case len(opts.Tau2) > 0 && (opts.Store != "" || opts.Sessions != ""):
				return &FlagError{errors.New("--tau2: not with --store or --sessions; name one source of episodes")}
			case opts.Tools != "" && len(opts.Tau2) == 0:
				return &FlagError{errors.New("--tools: only with --tau2")}
			case opts.Parallel < 1:
				return &FlagError{fmt.Errorf("--parallel %d: want at least 1", opts.Parallel)}
			case opts.TimeScale < 0:
				return &FlagError{fmt.Errorf("--time-scale %v: want 0 or more", opts.TimeScale)}
			case opts.Timeout <= 0:
				return &FlagError{errors.New("--timeout: must be more than 0")}
			}
			if len(opts.Tau2) == 0 {
				if _, err := opts.storePath(); err != nil {
					return err
				}
			}
			if err := opts.ruleOptions.check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runReplay(cmd.Context(), opts)
		},
	}
	addStoreFlags(cmd, &opts.storeOptions)
	fl := cmd.Flags()
	fl.StringSliceVar(&opts.Tau2, "tau2", nil, "replay the simulations of these τ²-bench results `FILE`s (repeat, or comma-separate)")
	fl.StringVar(&opts.Tools, "tools", "", "with --tau2: the tools' kinds manifest `FILE` (tool_kinds.json); default the flow's")
	fl.StringVar(&opts.Flow, "flow", "", "the flow `FILE` to serve (from hoist learn, compile or promote)")
	fl.StringVar(&opts.Domain, "domain", "", "replay only the episodes of this `DOMAIN`")
	fl.StringVar(&opts.Proxy, "proxy", "", "the hoist-mcp `PROGRAM` to serve through (default: the one beside hoist, else on PATH)")
	fl.StringVar(&opts.Out, "out", "", "keep what the proxies recorded in `DIR`/live, and each conversation in DIR/context")
	fl.IntVar(&opts.Parallel, "parallel", DefaultReplayParallel, "replay at most `N` episodes at once")
	fl.Float64Var(&opts.TimeScale, "time-scale", 1, "wait `F` times the recorded time between turns (0: no waiting)")
	addRuleFlags(fl, &opts.ruleOptions, true)
	fl.DurationVar(&opts.Timeout, "timeout", procedure.DefaultCallTimeout, "wait at most `TIME` for each answer")
	fl.BoolVar(&opts.JSON, "json", false, "write the report as JSON")
	return cmd
}

// ReplayEpisode is one episode of hoist replay's report: its live replay,
// its offline audit, whether they saved the same turns, and the turns
// inference found in the live recording (nil when it was not found).
type ReplayEpisode struct {
	ID       string                  `json:"episode"`
	Domain   string                  `json:"domain"`
	TaskID   string                  `json:"task_id,omitempty"`
	Live     *procedure.ReplayReport `json:"live,omitempty"`
	Offline  audit.Counts            `json:"offline"`
	Agree    bool                    `json:"agree"`
	Inferred *int                    `json:"inferred_turns"`
	Error    string                  `json:"error,omitempty"`

	ep    *episode.Episode
	audit *audit.Episode
}

// ReplayDomain is one domain's row of hoist replay's report.
type ReplayDomain struct {
	Domain   string `json:"domain"`
	Episodes int    `json:"episodes"`
	Failed   int    `json:"failed"`
	// LLMTurns are the recorded model responses; ToolTurns those that
	// called tools.
	LLMTurns  int `json:"llm_turns"`
	ToolTurns int `json:"tool_turns"`
	// Live: the turns the replay skipped, and the proxy's lookups.
	Saved              int      `json:"saved_turns"`
	SavedOfLLMTurns    float64  `json:"saved_of_llm_turns"`
	SavedOfToolTurns   float64  `json:"saved_of_tool_turns"`
	Lookups            int      `json:"lookups"`
	LookupsUsed        int      `json:"lookups_used"`
	Precision          *float64 `json:"precision"`
	ResultsCompared    int      `json:"results_compared"`
	ResultsMatched     int      `json:"results_matched"`
	ResultsIdentical   int      `json:"results_identical"`
	Agree              int      `json:"agree"`
	InferenceChecked   int      `json:"inference_checked"`
	InferenceAgreed    int      `json:"inference_agreed"`
	OfflineSaved       float64  `json:"offline_saved_turns"`
	OfflineOfToolTurns float64  `json:"offline_saved_of_tool_turns"`
	OfflineOfLLMTurns  float64  `json:"offline_saved_of_llm_turns"`
	OfflineLookups     int      `json:"offline_lookups"`
	OfflinePrecision   *float64 `json:"offline_precision"`
	// Audit is hoist audit's report of the same episodes and flow, with
	// its intervals; Live is the live replay summed the same way (turns
	// skipped as saved, lookups used as hits), so its shares come with
	// intervals over episodes too.
	Audit *audit.Report `json:"audit"`
	Live  *audit.Report `json:"live"`
}

// ReplayReport is hoist replay's report.
type ReplayReport struct {
	Flow      string          `json:"flow"`
	TimeScale float64         `json:"time_scale"`
	Parallel  int             `json:"parallel"`
	Seconds   float64         `json:"seconds"`
	Domains   []ReplayDomain  `json:"domains"`
	Episodes  []ReplayEpisode `json:"episodes"`
}

func runReplay(ctx context.Context, o *replayOptions) error {
	f, err := flow.Load(o.Flow)
	if err != nil {
		return err
	}
	proxy, err := findProxy(o.Proxy)
	if err != nil {
		return err
	}
	eps, bad, err := ReplayEpisodes(ctx, o, f)
	if err != nil {
		return err
	}
	if len(eps) == 0 {
		return fmt.Errorf("no episodes to replay%s", domainHint(o.Domain))
	}
	out := o.Out
	if out == "" {
		if out, err = os.MkdirTemp("", "hoist-replay-"); err != nil {
			return err
		}
		defer os.RemoveAll(out)
	}
	for _, d := range []string{"live", "context"} {
		if err := os.MkdirAll(filepath.Join(out, d), 0o700); err != nil {
			return err
		}
	}
	aopt := audit.Options{
		Rule: o.rule(f),
		Caps: o.caps(),
	}
	start := time.Now()
	results := make([]ReplayEpisode, len(eps))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(o.Parallel, len(eps)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				results[i] = replayOne(ctx, o, f, aopt, proxy, out, eps[i])
			}
		}()
	}
feed:
	for i := range eps {
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	rep := &ReplayReport{Flow: o.Flow, TimeScale: o.TimeScale, Parallel: o.Parallel, Seconds: time.Since(start).Seconds(), Episodes: results}
	if err := checkInference(ctx, filepath.Join(out, "live"), results); err != nil {
		fmt.Fprintf(o.IO.Err, "hoist: checking the live turns: %v\n", err)
	}
	rep.Domains = summarizeReplay(results, aopt)
	failed := 0
	for _, r := range results {
		if r.Error != "" {
			failed++
			fmt.Fprintf(o.IO.Err, "hoist: replaying %s: %s\n", r.ID, r.Error)
		}
	}
	if o.JSON {
		enc := json.NewEncoder(o.IO.Out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		writeReplayText(o.IO.Out, rep)
	}
	switch {
	case failed > 0:
		return fmt.Errorf("%s of %d failed (named above)", plural(failed, "replay", "replays"), len(results))
	case bad:
		return badInputError()
	}
	return nil
}

// findProxy returns the hoist-mcp to serve through: --proxy, else the one
// beside this program, else the one on PATH.
func findProxy(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "hoist-mcp")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath("hoist-mcp"); err == nil {
		return p, nil
	}
	return "", &FlagError{errors.New("--proxy: no hoist-mcp beside hoist nor on PATH; name it with --proxy PROGRAM")}
}

// ReplayEpisodes reads the episodes to replay: from τ²-bench results files,
// or from the store.
func ReplayEpisodes(ctx context.Context, o *replayOptions, f *flow.Flow) ([]*episode.Episode, bool, error) {
	var eps []*episode.Episode
	keep := func(ep *episode.Episode) error {
		if o.Domain == "" || ep.Domain == o.Domain {
			eps = append(eps, ep)
		}
		return nil
	}
	if len(o.Tau2) > 0 {
		opt := episode.Tau2Options{Kinds: episode.ToolKinds{}}
		if o.Tools != "" {
			k, err := episode.LoadToolKinds(o.Tools)
			if err != nil {
				return nil, false, err
			}
			opt.Kinds = k
		}
		for _, path := range o.Tau2 {
			file, err := os.Open(path)
			if err != nil {
				return nil, false, fmt.Errorf("opening τ²-bench results: %w", err)
			}
			err = episode.EachTau2(file, path, flowKinds(opt, f), keep)
			file.Close()
			if err != nil {
				return nil, false, err
			}
		}
		return eps, false, nil
	}
	db, bad, err := openStore(ctx, o.IO, &o.storeOptions)
	if err != nil {
		return nil, false, err
	}
	defer db.Close()
	err = db.Episodes(ctx, episode.Filter{Domain: o.Domain}, keep)
	return eps, bad, err
}

// flowKinds fills the kinds a manifest does not give from the flow, whose
// tools carry theirs.
func flowKinds(opt episode.Tau2Options, f *flow.Flow) episode.Tau2Options {
	for name, t := range f.Tools {
		bare := f.BareName(name)
		for _, domain := range append([]string{t.Server}, f.Servers...) {
			if opt.Kinds[domain] == nil {
				opt.Kinds[domain] = map[string]episode.Kind{}
			}
			if _, ok := opt.Kinds[domain][bare]; !ok {
				opt.Kinds[domain][bare] = t.Kind
			}
		}
	}
	return opt
}

// replayOne audits one episode offline and replays it live, through its own
// proxy and world.
func replayOne(ctx context.Context, o *replayOptions, f *flow.Flow, aopt audit.Options, proxy, out string, ep *episode.Episode) ReplayEpisode {
	r := ReplayEpisode{ID: ep.ID, Domain: ep.Domain, TaskID: ep.TaskID, ep: ep}
	name := safeName(ep.ID)
	ctxPath := filepath.Join(out, "context", name+".jsonl")
	ctxFile, err := os.OpenFile(ctxPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer ctxFile.Close()
	command := []string{proxy, "--flow", o.Flow,
		"--flow-threshold", strconv.FormatFloat(o.Threshold, 'g', -1, 64),
		"--flow-decider", string(o.decider),
		"--flow-per-call", strconv.Itoa(o.PerCall),
		"--flow-per-session", strconv.Itoa(o.PerSession),
		"--task-id", flow.TaskKey(ep),
		"--context", ctxPath,
		"--record", filepath.Join(out, "live"),
	}
	if ep.Domain != "" {
		command = append(command, "--domain", ep.Domain)
	}
	if len(f.Servers) == 1 {
		command = append(command, "--server-name", f.Servers[0]) // as hoist audit serves a one-server flow
	}
	command = append(append(command, "--"), o.World...)
	var stderr bytes.Buffer
	env := append(os.Environ(), "HOIST_SESSION="+replayHostSession(ep.ID))
	c, err := procedure.Start(command, &lockedWriter{w: &stderr}, env)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	rep, runErr := procedure.Replay(ctx, c, procedure.NewRecording(recordingName(ep), ep), procedure.ReplayOptions{
		Context: ctxFile, TimeScale: o.TimeScale, CallTimeout: o.Timeout,
	})
	closeErr := c.Close(replayStopGrace)
	r.Live = rep
	if err := errors.Join(runErr, closeErr); err != nil {
		r.Error = err.Error()
		if s := strings.TrimSpace(stderr.String()); s != "" {
			r.Error += " (" + strings.ReplaceAll(s, "\n", "; ") + ")"
		}
		return r
	}
	a, err := audit.Walk(f, withListing(ep, rep.Listed), aopt)
	if err != nil {
		r.Error = "auditing: " + err.Error()
		return r
	}
	r.audit, r.Offline = a, a.Total
	r.Agree = float64(rep.TurnsSkipped) == a.Total.Saved
	return r
}

// withListing returns ep with the input schemas the live server listed for
// the tools whose listing the recording lacks (a τ²-bench results file
// holds none), so that the audit checks the flow's pinned contracts
// against what the proxy saw.
func withListing(ep *episode.Episode, listed []procedure.Tool) *episode.Episode {
	schemas := map[string][]byte{}
	for _, t := range listed {
		schemas[t.Name] = t.InputSchema
	}
	var tools []episode.Tool
	changed := false
	for _, t := range ep.Tools {
		if len(t.InputSchema) == 0 && schemas[t.Name] != nil {
			t.InputSchema = schemas[t.Name]
			changed = true
		}
		tools = append(tools, t)
	}
	if !changed {
		return ep
	}
	c := *ep
	c.Tools = tools
	return &c
}

// replayStopGrace is how long hoist replay waits for a proxy to
// exit after closing its stdin, and again after SIGTERM.
const replayStopGrace = 5 * time.Second

// lockedWriter serializes writes: a child's stderr is copied by its own
// goroutine.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// replayHostSession is the host session a replay's proxy records, by which
// its live episode is found again.
func replayHostSession(id string) string { return "replay-" + id }

func recordingName(ep *episode.Episode) string {
	if len(ep.Servers) > 0 && ep.Servers[0].Path != "" {
		return ep.Servers[0].Path
	}
	return ep.ID
}

// safeName makes an episode id a file name.
func safeName(id string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == '#' || r == ':' || r < ' ' {
			return '_'
		}
		return r
	}, id)
}

// checkInference reads what the proxies recorded and sets each episode's
// inferred turns: the LLM turns of the agent's that turn inference finds
// in its live session, from timing, as in any recorded session.
func checkInference(ctx context.Context, dir string, results []ReplayEpisode) error {
	db, err := store.Open(ctx, filepath.Join(dir, DefaultStoreName))
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := ingest.Dir(ctx, db, dir, ingest.Options{}); err != nil {
		return err
	}
	byHost := map[string]int{}
	for i := range results {
		byHost[replayHostSession(results[i].ID)] = i
	}
	return db.Episodes(ctx, episode.Filter{}, func(ep *episode.Episode) error {
		i, ok := byHost[ep.HostSession]
		if !ok || results[i].Live == nil {
			return nil
		}
		n := 0
		calls := ep.Calls()
		for _, t := range ep.Turns {
			for _, ci := range t.Calls {
				if calls[ci].By != episode.Proxy {
					n++
					break
				}
			}
		}
		results[i].Inferred = &n
		return nil
	})
}

// summarizeReplay sums the episodes by domain.
func summarizeReplay(results []ReplayEpisode, aopt audit.Options) []ReplayDomain {
	by := map[string]*ReplayDomain{}
	audits, lives := map[string][]*audit.Episode{}, map[string][]*audit.Episode{}
	var names []string
	for _, r := range results {
		d := by[r.Domain]
		if d == nil {
			d = &ReplayDomain{Domain: r.Domain}
			by[r.Domain] = d
			names = append(names, r.Domain)
		}
		d.Episodes++
		if r.Error != "" || r.Live == nil {
			d.Failed++
			continue
		}
		l := r.Live
		d.LLMTurns += l.LLMTurns
		d.ToolTurns += l.ToolTurns
		d.Saved += l.TurnsSkipped
		d.Lookups += l.Lookups
		d.LookupsUsed += l.LookupsUsed
		d.ResultsCompared += l.ResultsCompared
		d.ResultsMatched += l.ResultsMatched
		d.ResultsIdentical += l.ResultsIdentical
		if r.Agree {
			d.Agree++
		}
		if r.Inferred != nil {
			d.InferenceChecked++
			if *r.Inferred == l.TurnsMade {
				d.InferenceAgreed++
			}
		}
		d.OfflineSaved += r.Offline.Saved
		d.OfflineLookups += r.Offline.Lookups
		audits[r.Domain] = append(audits[r.Domain], r.audit)
		lives[r.Domain] = append(lives[r.Domain], &audit.Episode{ID: r.ID, Turns: l.ToolTurns,
			Total: audit.Counts{Lookups: l.Lookups, Hits: l.LookupsUsed, Detours: l.Lookups - l.LookupsUsed, Saved: float64(l.TurnsSkipped)},
			Sites: map[string]*audit.Counts{}, Servers: map[string]*audit.Counts{}})
	}
	sort.Strings(names)
	out := make([]ReplayDomain, 0, len(names))
	share := func(a float64, b int) float64 {
		if b == 0 {
			return 0
		}
		return a / float64(b)
	}
	for _, name := range names {
		d := by[name]
		d.SavedOfLLMTurns = share(float64(d.Saved), d.LLMTurns)
		d.SavedOfToolTurns = share(float64(d.Saved), d.ToolTurns)
		d.OfflineOfLLMTurns = share(d.OfflineSaved, d.LLMTurns)
		d.OfflineOfToolTurns = share(d.OfflineSaved, d.ToolTurns)
		if d.Lookups > 0 {
			p := float64(d.LookupsUsed) / float64(d.Lookups)
			d.Precision = &p
		}
		if len(audits[name]) > 0 {
			d.Live = audit.Summarize(lives[name], aopt)
			d.Audit = audit.Summarize(audits[name], aopt)
			if d.Audit.Total.Precision != nil {
				p := d.Audit.Total.Precision.Value
				d.OfflinePrecision = &p
			}
		}
		out = append(out, *d)
	}
	return out
}

func writeReplayText(w io.Writer, r *ReplayReport) {
	n := len(r.Episodes)
	fmt.Fprintf(w, "Replay of %s: %s through hoist-mcp --flow, %d at a time, time scale %g: %.1f s, %.2f episodes/s\n\n",
		r.Flow, plural(n, "episode", "episodes"), r.Parallel, r.TimeScale, r.Seconds, float64(n)/max(r.Seconds, 1e-9))
	pct := func(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }
	prec := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return pct(*p)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "domain\t\tepisodes\tLLM turns\twith calls\tturns saved\tof LLM turns\tof those with calls\tlookups\tprecision")
	for _, d := range r.Domains {
		live, off := "-", "-"
		livePrec, offPrec := prec(d.Precision), prec(d.OfflinePrecision)
		if d.Live != nil && d.Audit != nil {
			live, off = interval(&d.Live.Total.Saved), interval(&d.Audit.Total.Saved)
			livePrec, offPrec = interval(d.Live.Total.Precision), interval(d.Audit.Total.Precision)
		}
		fmt.Fprintf(tw, "%s\tlive\t%d\t%d\t%d\t%d\t%s\t%s\t%d\t%s\n", d.Domain, d.Episodes, d.LLMTurns, d.ToolTurns,
			d.Saved, pct(d.SavedOfLLMTurns), live, d.Lookups, livePrec)
		fmt.Fprintf(tw, "\toffline (audit)\t\t\t\t%.0f\t%s\t%s\t%d\t%s\n",
			d.OfflineSaved, pct(d.OfflineOfLLMTurns), off, d.OfflineLookups, offPrec)
	}
	tw.Flush()
	for _, d := range r.Domains {
		fmt.Fprintf(w, "\n%s: the same turns saved live and offline in %d of %d episodes; reads as recorded %d of %d (%d byte for byte); LLM turns inferred from the live recordings as the replay made them in %d of %d\n",
			d.Domain, d.Agree, d.Episodes-d.Failed, d.ResultsMatched, d.ResultsCompared, d.ResultsIdentical, d.InferenceAgreed, d.InferenceChecked)
	}
	var differ []string
	for _, e := range r.Episodes {
		if e.Live != nil && e.Error == "" && !e.Agree {
			differ = append(differ, fmt.Sprintf("%s (live %d, audit %.0f)", e.ID, e.Live.TurnsSkipped, e.Offline.Saved))
		}
	}
	if len(differ) > 0 {
		fmt.Fprintf(w, "Live and offline saved different turns in %s: %s\n", plural(len(differ), "episode", "episodes"), strings.Join(differ, ", "))
	}
}
