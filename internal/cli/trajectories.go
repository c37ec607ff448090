package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/guards"
	"github.com/hoist-mcp/hoist/internal/iostreams"
)

// trajectoryOptions say where the commands that replay the guards over
// recorded trajectories (hoist guards, hoist confirm) read them: τ²-bench
// results files, whose rewards are known, or session logs and stores.
type trajectoryOptions struct {
	storeOptions
	Tau2   []string
	Domain string
}

// addTrajectoryFlags registers --tau2, --domain and the store's flags.
func addTrajectoryFlags(cmd *cobra.Command, o *trajectoryOptions) {
	addStoreFlags(cmd, &o.storeOptions)
	fl := cmd.Flags()
	fl.StringArrayVar(&o.Tau2, "tau2", nil, "τ²-bench results `FILE`s (repeat, or list them after the flags)")
	fl.StringVar(&o.Domain, "domain", "", "check only episodes of `DOMAIN` (retail or airline), and take episodes that name none for it")
}

// checkTrajectoryArgs takes the results files listed after the flags and
// checks that something is named, and the domain.
func (o *trajectoryOptions) checkTrajectoryArgs(args []string) error {
	if len(args) > 0 {
		if len(o.Tau2) == 0 {
			return &FlagError{fmt.Errorf("unexpected argument %q: name results files with --tau2 FILE, logs with --sessions DIR", args[0])}
		}
		o.Tau2 = append(o.Tau2, args...)
	}
	if len(o.Tau2) == 0 {
		if _, err := o.storePath(); err != nil {
			return &FlagError{errors.New("say what to check: --tau2 and results files, --sessions DIR, or --store PATH")}
		}
	}
	if o.Domain != "" {
		if _, err := guards.Rules(o.Domain); err != nil {
			return &FlagError{fmt.Errorf("--domain: %w", err)}
		}
	}
	return nil
}

// eachTrajectory calls each with every episode of a domain with guards,
// and a new guards session for it made by session; the others are
// counted and named on stderr. bad reports input that was bad but read
// past (the store's problems).
func eachTrajectory(ctx context.Context, io iostreams.Streams, o *trajectoryOptions, session func(domain string) (*guards.Session, error), each func(*episode.Episode, *guards.Session) error) (bad bool, err error) {
	skipped := map[string]int{}
	visit := func(ep *episode.Episode) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		domain := ep.Domain
		if domain == "" {
			domain = o.Domain
		}
		if o.Domain != "" && domain != o.Domain {
			skipped[domain]++
			return nil
		}
		s, err := session(domain)
		if err != nil {
			skipped[domain]++
			return nil
		}
		return each(ep, s)
	}
	for _, path := range o.Tau2 {
		f, err := os.Open(path)
		if err != nil {
			return false, fmt.Errorf("reading τ²-bench results: %w", err)
		}
		err = episode.EachTau2(f, path, episode.Tau2Options{Domain: o.Domain}, visit)
		f.Close()
		if err != nil {
			return false, err
		}
	}
	if o.Sessions != "" || o.Store != "" {
		db, b, err := openStore(ctx, io, &o.storeOptions)
		if err != nil {
			return false, err
		}
		defer db.Close()
		bad = b
		if err := db.Episodes(ctx, episode.Filter{}, visit); err != nil {
			return bad, err
		}
	}
	if !o.Quiet {
		var names []string
		for d, n := range skipped {
			if d == "" {
				d = "none"
			}
			names = append(names, fmt.Sprintf("%d of domain %s", n, d))
		}
		sort.Strings(names)
		if len(names) > 0 {
			fmt.Fprintf(io.Err, "hoist: left out episodes without guards or of another domain: %s\n", strings.Join(names, ", "))
		}
	}
	return bad, nil
}

// walkWrites runs a guards session over one episode in its order, as the
// proxy sees it: the conversation and every result feed the facts, and
// each of the agent's writes is checked before its result, as the proxy
// checks it before the server sees it, then counted as sent, since it
// was. fn gets each write with its check. The proxy's own calls (a flow's
// lookups) are facts, not writes to check.
func walkWrites(s *guards.Session, ep *episode.Episode, fn func(c *episode.Call, check guards.Check)) {
	calls := ep.Calls()
	for _, ev := range ep.Events {
		switch ev.Type {
		case episode.EventMessage:
			s.Message(ev.Message.Role, ev.Message.Text)
		case episode.EventCall:
			c := ev.Call
			if c.By != episode.Agent {
				continue
			}
			check := s.Check(c.Tool, c.Args)
			if check.Write {
				fn(c, check)
				s.Sent(c.Tool, c.Args)
			}
		case episode.EventResult:
			r := ev.Result
			if r.CallIndex < 0 || r.CallIndex >= len(calls) {
				continue
			}
			c := calls[r.CallIndex]
			s.Result(c.Tool, c.Args, r.Text, r.IsError)
		}
	}
}
