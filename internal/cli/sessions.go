package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/store"
)

// sessionsOptions are hoist sessions' inputs.
type sessionsOptions struct {
	IO iostreams.Streams
	storeOptions
	JSON        bool
	Domain      string
	HostSession string
	Since       string
	Until       string
	Problems    bool

	filter episode.Filter
}

func newCmdSessions(f *Factory, runF func(context.Context, *sessionsOptions) error, showF func(context.Context, *showOptions) error) *cobra.Command {
	opts := &sessionsOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "sessions [flags]",
		Short: "List the sessions in the episode store",
		Long: `hoist sessions lists the sessions in the episode store, oldest first: each
host session hoist-mcp recorded (its servers' logs merged) and each τ²-bench
simulation. For each it shows the servers, when it started and how long it
ran, the LLM turns (inferred from timing for logs, exact for τ²-bench), the
tool calls, how many of them were reads and writes (from the tools'
readOnlyHint), how many failed, and the reward when it is known.

On a terminal the list is a table; in a pipe it is the same columns separated
by tabs, a header line naming them and then one session a line. --json prints a JSON array of objects instead,
the same on a terminal and in a pipe, for scripts.

A session whose logs had lines that could not be read is flagged (BAD
LINES); --problems lists those lines instead of the sessions: the session,
the file and line, the member at fault and what was wrong. Each is named
once, when ingest first meets it; later commands only count the sessions
that have them.

hoist sessions show ID shows one session in full.

` + storeHelp + `

` + exitHelp,
		Example: `  hoist sessions --sessions ~/.hoist/logs
  hoist sessions --store episodes.db --domain retail --since 2026-03-01
  hoist sessions --store episodes.db --json | jq '.[] | select(.errors > 0) | .id'
  hoist sessions --sessions ~/.hoist/logs --problems`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := opts.storePath(); err != nil {
				return err
			}
			flt, err := parseFilter(opts.Domain, opts.HostSession, opts.Since, opts.Until)
			if err != nil {
				return err
			}
			opts.filter = flt
			opts.storeOptions.NoBadNote = opts.Problems
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runSessions(cmd.Context(), opts)
		},
	}
	addStoreFlags(cmd, &opts.storeOptions)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print a JSON array")
	cmd.Flags().StringVar(&opts.Domain, "domain", "", "only sessions of this domain")
	cmd.Flags().StringVar(&opts.HostSession, "host-session", "", "only sessions of this host session")
	cmd.Flags().StringVar(&opts.Since, "since", "", "only sessions started at or after this time (YYYY-MM-DD, UTC, or RFC 3339)")
	cmd.Flags().StringVar(&opts.Until, "until", "", "only sessions started before this time; a date includes its whole day")
	cmd.Flags().BoolVar(&opts.Problems, "problems", false, "list the lines of the sessions' logs that could not be read, instead of the sessions")
	cmd.AddCommand(newCmdSessionsShow(f, showF))
	return cmd
}

// parseFilter checks the filter flags.
func parseFilter(domain, host, since, until string) (episode.Filter, error) {
	f := episode.Filter{Domain: domain, HostSession: host}
	var err error
	if since != "" {
		if f.Since, _, err = parseWhen(since); err != nil {
			return f, &FlagError{fmt.Errorf("--since: %w", err)}
		}
	}
	if until != "" {
		var dateOnly bool
		if f.Until, dateOnly, err = parseWhen(until); err != nil {
			return f, &FlagError{fmt.Errorf("--until: %w", err)}
		}
		if dateOnly {
			f.Until = f.Until.AddDate(0, 0, 1)
		}
	}
	return f, nil
}

func parseWhen(s string) (time.Time, bool, error) {
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, true, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, false, nil
	}
	return time.Time{}, false, fmt.Errorf("%q is neither a date (2026-03-08) nor a time (2026-03-08T14:00:00Z)", s)
}

func runSessions(ctx context.Context, opts *sessionsOptions) error {
	db, bad, err := openStore(ctx, opts.IO, &opts.storeOptions)
	if err != nil {
		return err
	}
	defer db.Close()
	if opts.Problems {
		if err := printProblems(ctx, opts, db); err != nil {
			return err
		}
		if bad {
			return badInputError()
		}
		return nil
	}
	list, err := db.Sessions(ctx, opts.filter)
	if err != nil {
		return err
	}
	switch {
	case opts.JSON:
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(list); err != nil {
			return err
		}
	case iostreams.IsTerminal(opts.IO.Out):
		printSessionsTable(opts.IO.Out, list, true)
	default:
		printSessionsTable(opts.IO.Out, list, false)
	}
	if bad {
		return badInputError()
	}
	return nil
}

func printSessionsTable(w io.Writer, list []store.Session, tty bool) {
	var out io.Writer = w
	var tw *tabwriter.Writer
	if tty {
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		out = tw
	}
	fmt.Fprintln(out, "ID\tDOMAIN\tSERVERS\tSTARTED (UTC)\tDURATION\tTURNS\tCALLS\tREADS/WRITES\tERRORS\tREWARD\tBAD LINES") // in a pipe too: TSV with a header
	for _, s := range list {
		reward := "-"
		if s.Reward != nil {
			reward = strconv.FormatFloat(*s.Reward, 'g', 4, 64)
		}
		domain := s.Domain
		if domain == "" {
			domain = "-"
		}
		bad := "-"
		if s.FlowOff != "" {
			fmt.Fprintf(w, "flow:          served nothing: %s\n", s.FlowOff)
		}
		if s.BadLines > 0 {
			bad = strconv.Itoa(s.BadLines)
		}
		fmt.Fprintf(out, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d/%d\t%d\t%s\t%s\n", s.ID, domain, strings.Join(s.Servers, ","),
			s.Started.UTC().Format("2006-01-02 15:04:05"), (time.Duration(s.DurationMS) * time.Millisecond).Round(time.Second/10),
			s.Turns, s.Calls, s.Reads, s.Writes, s.Errors, reward, bad)
	}
	if tw != nil {
		tw.Flush()
		if len(list) == 0 {
			fmt.Fprintln(w, "(no sessions)")
		}
	}
}

// showOptions are hoist sessions show's inputs.
type showOptions struct {
	IO iostreams.Streams
	storeOptions
	ID   string
	JSON bool
}

func newCmdSessionsShow(f *Factory, runF func(context.Context, *showOptions) error) *cobra.Command {
	opts := &showOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one session: its servers, tools, turns and calls",
		Long: `hoist sessions show ID prints one session of the store: its servers, the tools
they listed with their kinds (read, write or generic), and then each LLM turn
with its calls, their arguments and how each was answered, between the
messages of the conversation when the proxy was given it (--context). When
the proxy served a flow (hoist-mcp --flow), it also counts the runs and
decisions of the session's flow logs.

ID is the session's id as hoist sessions lists it. --json prints the same as
one JSON object.

` + storeHelp + `

` + exitHelp,
		Example: `  hoist sessions show 20260923T212000.123Z-4242 --sessions ~/.hoist/logs
  hoist sessions show 'airline-gpt-4o#3118cb6c' --store episodes.db --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &FlagError{errors.New("name one session: hoist sessions show ID (hoist sessions lists them)")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if _, err := opts.storePath(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runSessionsShow(cmd.Context(), opts)
		},
	}
	addStoreFlags(cmd, &opts.storeOptions)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print a JSON object")
	return cmd
}

// shownSession is hoist sessions show --json.
type shownSession struct {
	store.Session
	ServersDetail []shownServer `json:"server_details"`
	Tools         []shownTool   `json:"tools"`
	Events        []shownEvent  `json:"events"`
	TurnSpans     []shownTurn   `json:"turns"`
}

type shownServer struct {
	Name    string          `json:"name"`
	Session string          `json:"session,omitempty"`
	Path    string          `json:"path,omitempty"`
	Command []string        `json:"command,omitempty"`
	Info    json.RawMessage `json:"info,omitempty"`
}

type shownTool struct {
	Name        string          `json:"name"`
	Server      string          `json:"server,omitempty"`
	Kind        string          `json:"kind"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
}

type shownTurn struct {
	Index   int   `json:"index"`
	Calls   []int `json:"calls"`
	StartMS int64 `json:"start_ms"`
	EndMS   int64 `json:"end_ms"`
}

type shownEvent struct {
	Type       string          `json:"type"`
	TMS        int64           `json:"t_ms"`
	Role       string          `json:"role,omitempty"`
	Text       *string         `json:"text,omitempty"`
	CallIndex  *int            `json:"call_index,omitempty"`
	Turn       *int            `json:"turn,omitempty"`
	RequestID  string          `json:"request_id,omitempty"`
	Server     string          `json:"server,omitempty"`
	Tool       string          `json:"tool_name,omitempty"`
	Actor      string          `json:"actor,omitempty"`
	Arguments  json.RawMessage `json:"arguments,omitempty"`
	IsError    *bool           `json:"is_error,omitempty"`
	Cancelled  bool            `json:"cancelled,omitempty"`
	Unanswered bool            `json:"unanswered,omitempty"`
	Unreadable bool            `json:"unreadable,omitempty"`
}

func showJSON(ep *episode.Episode, s *store.Session) shownSession {
	out := shownSession{Session: *s, ServersDetail: []shownServer{}, Tools: []shownTool{}, Events: []shownEvent{}, TurnSpans: []shownTurn{}}
	for _, sv := range ep.Servers {
		out.ServersDetail = append(out.ServersDetail, shownServer{sv.Name, sv.Session, sv.Path, sv.Command, sv.Info})
	}
	for _, t := range ep.Tools {
		out.Tools = append(out.Tools, shownTool{t.Name, t.Server, string(t.Kind), t.InputSchema})
	}
	for _, t := range ep.Turns {
		out.TurnSpans = append(out.TurnSpans, shownTurn{t.Index, append([]int{}, t.Calls...), t.StartMS, t.EndMS})
	}
	for _, ev := range ep.Events {
		e := shownEvent{Type: string(ev.Type), TMS: ev.TMS}
		switch {
		case ev.Message != nil:
			e.Role, e.Text = ev.Message.Role, &ev.Message.Text
		case ev.Call != nil:
			c := ev.Call
			idx, turn := c.Index, c.Turn
			e.CallIndex, e.Turn, e.RequestID, e.Server, e.Tool, e.Actor, e.Arguments = &idx, &turn, c.ID, c.Server, c.Tool, string(c.By), c.Args
			e.Cancelled, e.Unanswered, e.Unreadable = c.Cancelled, c.Result == nil && !c.Unreadable, c.Unreadable
		case ev.Result != nil:
			idx, isErr := ev.Result.CallIndex, ev.Result.IsError
			e.CallIndex, e.Text, e.IsError = &idx, &ev.Result.Text, &isErr
		}
		out.Events = append(out.Events, e)
	}
	return out
}

func runSessionsShow(ctx context.Context, opts *showOptions) error {
	db, bad, err := openStore(ctx, opts.IO, &opts.storeOptions)
	if err != nil {
		return err
	}
	defer db.Close()
	ep, s, err := db.Episode(ctx, opts.ID)
	if err != nil {
		return err
	}
	if ep == nil {
		return fmt.Errorf("no session %q in %s (hoist sessions lists them)", opts.ID, db.Path())
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(showJSON(ep, s)); err != nil {
			return err
		}
	} else {
		printEpisode(opts.IO.Out, ep, s)
	}
	if bad {
		return badInputError()
	}
	return nil
}

func printEpisode(w io.Writer, ep *episode.Episode, s *store.Session) {
	fmt.Fprintf(w, "session %s (%s)\n", ep.ID, ep.Source)
	if ep.Domain != "" {
		fmt.Fprintf(w, "domain:        %s\n", ep.Domain)
	}
	if ep.HostSession != "" {
		fmt.Fprintf(w, "host session:  %s\n", ep.HostSession)
	}
	if ep.AgentModel != "" {
		fmt.Fprintf(w, "agent model:   %s\n", ep.AgentModel)
	}
	if ep.ClientName != "" {
		fmt.Fprintf(w, "MCP client:    %s\n", ep.ClientName)
	}
	if ep.TaskID != "" {
		fmt.Fprintf(w, "task:          %s (trial %d)\n", ep.TaskID, ep.Trial)
	}
	if ep.Reward != nil {
		fmt.Fprintf(w, "reward:        %g\n", *ep.Reward)
	}
	fmt.Fprintf(w, "started:       %s, ran %s\n", ep.Started.UTC().Format("2006-01-02 15:04:05.000 UTC"), time.Duration(s.DurationMS)*time.Millisecond)
	fmt.Fprintf(w, "counts:        %d LLM turns, %d calls (%d reads, %d writes), %d errors, %d messages\n",
		s.Turns, s.Calls, s.Reads, s.Writes, s.Errors, s.Messages)
	if s.Runs > 0 || s.Decisions > 0 {
		fmt.Fprintf(w, "flow log:      %d runs, %d decisions (hoist export writes them as the runs and decisions datasets)\n", s.Runs, s.Decisions)
	}
	if s.FlowOff != "" {
		fmt.Fprintf(w, "flow:          served nothing: %s\n", s.FlowOff)
	}
	if s.BadLines > 0 {
		fmt.Fprintf(w, "bad lines:     %s could not be read (hoist sessions --problems)\n", plural(s.BadLines, "line of its logs", "lines of its logs"))
	}
	fmt.Fprintf(w, "\nservers:\n")
	for _, sv := range ep.Servers {
		fmt.Fprintf(w, "  %s", sv.Name)
		if len(sv.Command) > 0 {
			fmt.Fprintf(w, "  (%s)", strings.Join(sv.Command, " "))
		}
		if sv.Path != "" {
			fmt.Fprintf(w, "  %s", sv.Path)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\ntools:\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, t := range ep.Tools {
		fmt.Fprintf(tw, "  %s\t%s\n", t.Name, t.Kind)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nevents (ms from the start):\n")
	turn := -1
	for _, ev := range ep.Events {
		switch {
		case ev.Message != nil:
			fmt.Fprintf(w, "  %7d  %s: %s\n", ev.TMS, ev.Message.Role, clip(ev.Message.Text, 160))
		case ev.Call != nil:
			c := ev.Call
			if c.Turn != turn {
				turn = c.Turn
				fmt.Fprintf(w, "  -- LLM turn %d\n", turn)
			}
			by := ""
			if c.By == episode.Proxy {
				by = " (by the proxy)"
			}
			state := ""
			switch {
			case c.Unreadable:
				state = "  [answered, but its answer's log line is unreadable]"
			case c.Result == nil && c.Cancelled:
				state = "  [cancelled, never answered]"
			case c.Result == nil:
				state = "  [never answered]"
			case c.Cancelled:
				state = "  [cancelled]"
			}
			fmt.Fprintf(w, "  %7d  call #%d %s %s%s%s\n", ev.TMS, c.Index, c.Tool, clip(string(c.Args), 160), by, state)
		case ev.Result != nil:
			tag := "result"
			if ev.Result.IsError {
				tag = "ERROR"
			}
			fmt.Fprintf(w, "  %7d  %s #%d: %s\n", ev.TMS, tag, ev.Result.CallIndex, clip(ev.Result.Text, 160))
		}
	}
}

// clip shortens s to one line of at most n runes.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// printProblems lists the bad lines of the sessions opts selects.
func printProblems(ctx context.Context, opts *sessionsOptions, db *store.DB) error {
	list, err := db.Problems(ctx, opts.filter)
	if err != nil {
		return err
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	var out io.Writer = opts.IO.Out
	var tw *tabwriter.Writer
	tty := iostreams.IsTerminal(opts.IO.Out)
	if tty {
		tw = tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
		out = tw
	}
	fmt.Fprintln(out, "SESSION\tFILE:LINE\tFIELD\tPROBLEM")
	for _, p := range list {
		field := p.Field
		if field == "" {
			field = "-"
		}
		fmt.Fprintf(out, "%s\t%s:%d\t%s\t%s\n", p.EpisodeID, p.Path, p.Line, field, p.Message)
	}
	if tw != nil {
		tw.Flush()
		if len(list) == 0 {
			fmt.Fprintln(opts.IO.Out, "(no bad lines)")
		}
	}
	return nil
}
