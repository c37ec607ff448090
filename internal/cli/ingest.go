package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/ingest"
	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/store"
)

// ingestOptions are hoist ingest's inputs.
type ingestOptions struct {
	IO iostreams.Streams
	storeOptions
	Tau2        []string
	Tools       string
	ToolSchemas string
}

func newCmdIngest(f *Factory, runF func(context.Context, *ingestOptions) error) *cobra.Command {
	opts := &ingestOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "ingest (--sessions DIR [--store PATH] | --tau2 FILE... --store PATH [--tools FILE] | --store PATH)",
		Short: "Load session logs or τ²-bench results into the episode store",
		Long: `hoist ingest loads what agents did into the episode store, the SQLite file
every other hoist command reads.

With --sessions DIR, it reads the session logs hoist-mcp --record wrote in DIR
(and in its subdirectories): every <session>.jsonl, leaving out the
.context.jsonl, .flow.jsonl and .confirm.jsonl files beside them. Each host
session becomes one session in the store, with its LLM turns inferred from
timing. The logs one host session left with several servers (one proxy per
server, the same HOIST_SESSION) are merged into one session, their tools named
server::tool; once a directory holds such a session, every tool in it is named
that way. A <session>.meta.json beside a log sets the task, trial, reward and
agent model. The flow log hoist-mcp --flow wrote beside a log,
<session>.flow.jsonl, is read with it, as the session's runs and decisions
(hoist export writes them as datasets); a flow log without its session log is
named and skipped.

Ingest is incremental and safe to repeat: a log already ingested and unchanged
is skipped, a log or flow log that grew (a session still being recorded) is
read again, and two ingests running at once leave the store as one would.
Sessions are written whole, many to a transaction, so an interrupted ingest
leaves no half-written session. A store that does not exist yet (or an empty
file) is built beside its path, as .NAME.build, and put at the path whole:
an ingest into it that fails or is interrupted leaves no store. A line that is not a log line (or not a flow-log line)
is named as file:line and skipped, and the rest of its log still loads; a file
that is not a session log is named and skipped.

With --tau2 FILE..., it reads τ²-bench results files instead: each simulation
becomes a session whose LLM turns are exact (one assistant message, one
turn), with its task, trial, reward and agent model. Tools are read, write or
generic as the --tools manifest says ({"retail": {"get_user_details": "read",
…}, …}), and their input contracts are those of --tool-schemas (τ²-bench's
tools.json); else both are as the domain's servers listed them in ingested
logs.

With --store PATH alone, it ingests nothing and brings the store up to date:
a store written by an older hoist gets the newer schema, which commands that
only read never give it.

` + storeHelp + `

Progress shows on a terminal only; --quiet hides it and the summary.

` + exitHelp,
		Example: `  # Load what the proxy recorded; the store is ~/.hoist/logs/hoist.db
  hoist ingest --sessions ~/.hoist/logs

  # The same logs into a store of your choosing
  hoist ingest --sessions ~/.hoist/logs --store ~/hoist/episodes.db

  # τ²-bench results, with the tools' kinds
  hoist ingest --store episodes.db --tau2 results/*.json \
      --tools tool_kinds.json --tool-schemas tools.json

  # Upgrade a store an older hoist wrote
  hoist ingest --store episodes.db`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(opts.Tau2) > 0 {
				opts.Tau2 = append(opts.Tau2, args...)
			} else if len(args) > 0 {
				return &FlagError{fmt.Errorf("unexpected argument %q: name logs with --sessions DIR, results files with --tau2 FILE", args[0])}
			}
			switch {
			case opts.Sessions == "" && len(opts.Tau2) == 0 && opts.Store == "":
				return &FlagError{errors.New("say what to ingest: --sessions DIR, or --tau2 and results files (or --store PATH alone, to upgrade a store)")}
			case opts.Sessions != "" && len(opts.Tau2) > 0:
				return &FlagError{errors.New("--sessions and --tau2 cannot be used together: ingest each in its own run")}
			case (opts.Tools != "" || opts.ToolSchemas != "") && len(opts.Tau2) == 0:
				return &FlagError{errors.New("--tools and --tool-schemas go with --tau2")}
			case len(opts.Tau2) > 0 && opts.Store == "":
				return &FlagError{errors.New("--tau2 needs --store PATH: the store to load the results into")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runIngest(cmd.Context(), opts)
		},
	}
	addStoreFlags(cmd, &opts.storeOptions)
	cmd.Flags().StringArrayVar(&opts.Tau2, "tau2", nil, "τ²-bench results files (more may follow as arguments)")
	cmd.Flags().StringVar(&opts.Tools, "tools", "", "with --tau2: a tool-kinds manifest (domain → tool → read|write|generic)")
	cmd.Flags().StringVar(&opts.ToolSchemas, "tool-schemas", "", "with --tau2: the tools' input contracts, in τ²-bench's tools.json shape")
	return cmd
}

func runIngest(ctx context.Context, opts *ingestOptions) error {
	path, err := opts.storePath()
	if err != nil {
		return err
	}
	if err := opts.checkSessions(); err != nil {
		return err
	}
	if opts.Sessions == "" && len(opts.Tau2) == 0 {
		return upgradeStore(ctx, opts.IO, path, opts.Quiet)
	}
	if err := opts.checkStoreDir(); err != nil {
		return err
	}
	// A new store is built beside its path and appears there whole.
	db, err := store.Build(ctx, path)
	if err != nil {
		return err
	}
	defer db.Close()
	var st ingest.Stats
	if opts.Sessions != "" {
		st, err = ingestSessions(ctx, opts.IO, db, opts.Sessions, opts.Quiet, true)
	} else {
		st, err = ingestTau2(ctx, opts, db)
	}
	if err != nil {
		return err
	}
	if err := db.Publish(ctx); err != nil {
		return err
	}
	if st.Problems() {
		return badInputError()
	}
	noteBadSessions(ctx, opts.IO, db, opts.Quiet)
	return nil
}

func ingestTau2(ctx context.Context, opts *ingestOptions, db *store.DB) (ingest.Stats, error) {
	var kinds episode.ToolKinds
	if opts.Tools != "" {
		k, err := episode.LoadToolKinds(opts.Tools)
		if err != nil {
			return ingest.Stats{}, err
		}
		kinds = k
	}
	var schemas episode.ToolSchemas
	if opts.ToolSchemas != "" {
		s, err := episode.LoadToolSchemas(opts.ToolSchemas)
		if err != nil {
			return ingest.Stats{}, err
		}
		schemas = s
	}
	start := time.Now()
	bar := newBar(opts.IO.Err, opts.Quiet, "ingesting")
	st, err := ingest.Tau2(ctx, db, opts.Tau2, ingest.Tau2Options{
		Kinds:   kinds,
		Schemas: schemas,
		Options: ingest.Options{Progress: func(p ingest.Progress) {
			bar.set(p.Files, p.FilesTotal, fmt.Sprintf("ingesting τ²-bench results: %d events", p.Lines))
		}},
	})
	bar.finish()
	if err != nil {
		return st, err
	}
	if !opts.Quiet {
		printIngestSummary(opts.IO.Err, st, time.Since(start))
	}
	return st, nil
}
