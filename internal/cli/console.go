package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/console"
	"github.com/hoist-mcp/hoist/internal/iostreams"
)

// DefaultConsoleAddr is where hoist console listens without --addr.
const DefaultConsoleAddr = "127.0.0.1:8940"

// consoleOptions are hoist console's inputs.
type consoleOptions struct {
	IO        iostreams.Streams
	Sessions  string
	Store     string
	Addr      string
	TokenFile string
	Flows     []string
	Poll      time.Duration
	ruleOptions

	token string // read from TokenFile
}

func newCmdConsole(f *Factory, runF func(context.Context, *consoleOptions) error) *cobra.Command {
	opts := &consoleOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "console (--sessions DIR | --store PATH) [flags]",
		Short: "Open a local web page over the sessions, the flows and what they save",
		Long: `hoist console serves a web page, on this machine, for looking at what the
proxy recorded and what a flow does to it:

  sessions   every session, newest first, filtered by domain, server, host
             session and date, with its LLM turns, calls, the lookups made
             in it (hits and detours, by hoist audit's rule), the turns
             saved and its bad lines;
  a session  its LLM turns as a timeline: each call with its arguments and
             a preview of its result, the proxy's lookups marked hit or
             detour, the text the proxy appended, the conversation, and each
             decision of the flow log with the lookups offered, their
             probabilities and bindings;
  a flow     its sites and lookups drawn as a graph, with the threshold, and
             what it never does and why (hoist flow-show's review);
  savings    the audit of a flow over the sessions, per site, as a chart
             (hoist audit);
  hosts      the configuration each host needs for a server command (what
             hoist init prints);
  holds      frames held by proxies attached to the console
             (hoist-mcp --console ADDR), to continue, inject, retry or
             abort (docs/console.md, "Holding a frame").

With --sessions DIR the console reads the logs in DIR as hoist-mcp writes
them: a session appears as soon as its proxy starts recording and the page
showing it grows as lines arrive. It reads them without a store and writes
nothing. With --store PATH it reads a store, opened read-only.

--flow FILE (repeatable) adds a flow's page and its savings, and audits the
list of sessions with it; --threshold and --decider serve it as hoist-mcp's
--flow-threshold and --flow-decider would.

The console listens on a loopback address only, and checks each request's
Host and Origin headers, so that no other site's page can read it; no page
may frame it, and each of its forms carries a token only its own pages
know, so that no other page can decide a held frame; with
--token-file FILE it may listen on any address and every request must carry
the token in FILE (Authorization: Bearer TOKEN; a browser opens
/?token=TOKEN once and keeps it in a cookie). Everything it serves is in
the binary: it fetches nothing from the network.`,
		Example: `  # After HOIST_DEMO_DIR=demo make demo: every session it recorded, and its flow:
  hoist console --sessions demo --flow demo/retail.flow.json

  # A store, on another port:
  hoist console --store episodes.db --addr 127.0.0.1:8941`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case opts.Sessions == "" && opts.Store == "":
				return &FlagError{errors.New("name the sessions with --sessions DIR, or a store with --store PATH")}
			case opts.Sessions != "" && opts.Store != "":
				return &FlagError{errors.New("--sessions and --store: give one (the console reads a directory's logs, or a store)")}
			}
			host, _, err := net.SplitHostPort(opts.Addr)
			if err != nil {
				return &FlagError{fmt.Errorf("--addr %q: want host:port, such as %s", opts.Addr, DefaultConsoleAddr)}
			}
			if opts.TokenFile == "" && !console.IsLoopback(host) {
				return &FlagError{fmt.Errorf("--addr %s: without --token-file the console serves only loopback addresses (127.0.0.1, [::1], localhost)", opts.Addr)}
			}
			if err := opts.ruleOptions.check(); err != nil {
				return err
			}
			if opts.TokenFile != "" {
				b, err := os.ReadFile(opts.TokenFile)
				if err != nil {
					return fmt.Errorf("--token-file: %w", err)
				}
				if opts.token = strings.TrimSpace(string(b)); opts.token == "" {
					return fmt.Errorf("--token-file %s: the file is empty", opts.TokenFile)
				}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runConsole(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Sessions, "sessions", "", "a `DIR`ectory of session logs recorded by hoist-mcp --record, read as it grows")
	fl.StringVar(&opts.Store, "store", "", "an episode store `PATH`, read-only")
	fl.StringVar(&opts.Addr, "addr", DefaultConsoleAddr, "serve the page at `ADDR` (host:port; port 0 picks a free one)")
	fl.StringVar(&opts.TokenFile, "token-file", "", "require the bearer token in `FILE`; allows non-loopback addresses")
	fl.StringArrayVar(&opts.Flows, "flow", nil, "a flow `FILE` to show and audit (repeatable)")
	fl.DurationVar(&opts.Poll, "poll", console.DefaultPoll, "how often to look for new and grown logs")
	addRuleFlags(fl, &opts.ruleOptions, true)
	return cmd
}

func runConsole(ctx context.Context, o *consoleOptions) error {
	var src console.Source
	var err error
	if o.Sessions != "" {
		src, err = console.OpenDir(ctx, o.Sessions)
	} else {
		src, err = console.OpenStore(ctx, o.Store)
	}
	if err != nil {
		return err
	}
	srv, err := console.New(console.Options{
		Source: src, Flows: o.Flows, Rule: o.rule(nil), Caps: o.caps(), Token: o.token, Poll: o.Poll,
		Hosts: consoleHosts, Filter: parseFilter,
	})
	if err != nil {
		src.Close()
		return err
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		src.Close()
		return fmt.Errorf("--addr %s: %w", o.Addr, err)
	}
	fmt.Fprintf(o.IO.Err, "hoist console: serving http://%s/ (Ctrl-C stops it)\n", ln.Addr())
	return srv.Serve(ctx, ln)
}

// consoleHosts is the hosts page's hoist init: init's own code, with the
// page's fields as its flags.
func consoleHosts(w io.Writer, req console.HostsRequest) error {
	o := &initOptions{f: &Factory{IO: iostreams.Streams{Out: w}}, listen: req.Listen, record: req.Record, domain: req.Domain, command: req.Command}
	if o.listen != "" {
		host, port, err := net.SplitHostPort(o.listen)
		if err != nil || port == "" || port == "0" {
			return fmt.Errorf("listen %q: want host:port with a fixed port, such as 127.0.0.1:8931", o.listen)
		}
		if !isLoopback(host) {
			return fmt.Errorf("listen %s: a proxy without a token serves only loopback addresses (hoist init --listen-token-file)", o.listen)
		}
	}
	o.name = o.domain
	if o.name == "" {
		o.name = "hoist"
	}
	return runInit(o)
}
