package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/ingest"
	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/store"
)

// ExitBadInput is the exit code of a command that did its work but met bad
// input on the way: malformed lines or logs it could not read, each named on
// stderr.
const ExitBadInput = 3

// DefaultStoreName is the store's file name beside the logs, when --sessions
// is given without --store.
const DefaultStoreName = "hoist.db"

// storeHelp is the part of each command's help that explains --store and
// --sessions, which work the same on every command.
const storeHelp = `The store is one SQLite file. --store PATH names it; without --store, a
command given --sessions DIR uses DIR/hoist.db, so each directory of logs
keeps its own store. A command given --sessions first ingests that directory
into the store, incrementally: logs already ingested and unchanged are
skipped, so this is fast the second time. Given --store alone, a command
only reads: it never creates or upgrades a store, and works on one that is
read-only. hoist never writes into an SQLite file it did not make, and
never makes directories: a --store in a directory that does not exist, or a
--sessions that is not one, is refused.`

const exitHelp = `Exit codes: 0 done; 1 failed (the store is left as it was before the
failing session); 2 bad flags or arguments; 3 done, but some input was bad
(malformed lines, logs that could not be read), each named on stderr.`

// storeOptions are the flags every store command shares.
type storeOptions struct {
	Store    string
	Sessions string
	Quiet    bool
	// problems is set by hoist sessions --problems, which lists the bad
	// lines rather than counting them.
	NoBadNote bool
}

func addStoreFlags(cmd *cobra.Command, o *storeOptions) {
	cmd.Flags().StringVar(&o.Store, "store", "", "the episode store (default: DIR/"+DefaultStoreName+" with --sessions DIR)")
	cmd.Flags().StringVar(&o.Sessions, "sessions", "", "a directory of session logs recorded by hoist-mcp --record, ingested first")
	cmd.Flags().BoolVarP(&o.Quiet, "quiet", "q", false, "print nothing but the command's output and errors")
}

// storePath returns the store to open, or a flag error when there is none.
func (o *storeOptions) storePath() (string, error) {
	switch {
	case o.Store != "":
		return o.Store, nil
	case o.Sessions != "":
		return filepath.Join(o.Sessions, DefaultStoreName), nil
	}
	return "", &FlagError{errors.New("name the store with --store PATH, or the logs with --sessions DIR (the store is then DIR/" + DefaultStoreName + ")")}
}

// checkStoreDir refuses a --store whose directory does not exist, before a
// command that writes the store opens or ingests anything (issue 25): hoist
// makes the store file, never the folders above it, so a mistyped path is a
// usage error rather than a new tree of directories. (A command that only
// reads says there is no store at the path.)
func (o *storeOptions) checkStoreDir() error {
	if o.Store == "" {
		return nil // DIR/hoist.db beside --sessions DIR, which checkSessions checks
	}
	path := o.Store
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		return &FlagError{fmt.Errorf("--store %s: no directory %s (hoist makes the store file, not the directories above it)", path, dir)}
	case !fi.IsDir():
		return &FlagError{fmt.Errorf("--store %s: %s is not a directory", path, dir)}
	}
	return nil
}

// checkSessions refuses a --sessions that is not a directory before the
// store is opened: opening the default store would create a mistyped DIR.
func (o *storeOptions) checkSessions() error {
	if o.Sessions == "" {
		return nil
	}
	if fi, err := os.Stat(o.Sessions); err != nil || !fi.IsDir() {
		return fmt.Errorf("--sessions %s: no such directory of session logs", o.Sessions)
	}
	return nil
}

// openStore opens the store a command reads. With --sessions it opens it
// for writing and ingests the logs into it first; with --store alone the
// command only reads, so the store is opened read-only: never created,
// marked or migrated, and readable on a read-only file or directory.
// badInput reports whether the ingest met bad input.
func openStore(ctx context.Context, io iostreams.Streams, o *storeOptions) (db *store.DB, badInput bool, err error) {
	path, err := o.storePath()
	if err != nil {
		return nil, false, err
	}
	if err := o.checkSessions(); err != nil {
		return nil, false, err
	}
	if o.Sessions == "" {
		db, err := store.OpenReadOnly(ctx, path)
		if err == nil && !o.NoBadNote {
			noteBadSessions(ctx, io, db, o.Quiet)
		}
		return db, false, err
	}
	if err := o.checkStoreDir(); err != nil {
		return nil, false, err
	}
	db, err = store.Build(ctx, path)
	var ro *store.ReadOnlyError
	if errors.As(err, &ro) {
		return nil, false, fmt.Errorf("%w, or leave out --sessions to read it as it is", err)
	}
	if err != nil {
		return nil, false, err
	}
	st, err := ingestSessions(ctx, io, db, o.Sessions, o.Quiet, false)
	if err == nil {
		err = db.Publish(ctx)
	}
	if err != nil {
		db.Close()
		return nil, false, err
	}
	if !st.Problems() && !o.NoBadNote {
		noteBadSessions(ctx, io, db, o.Quiet) // this ingest named none: say what earlier ones found
	}
	return db, st.Problems(), nil
}

// upgradeStore is hoist ingest --store PATH with nothing to ingest: it
// brings a store from an older hoist up to date (schema and mark), which
// commands that only read never do.
func upgradeStore(ctx context.Context, ios iostreams.Streams, path string, quiet bool) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no store at %s: nothing to upgrade (hoist ingest --sessions DIR --store %s makes one)", path, path)
	}
	db, err := store.Open(ctx, path)
	if err != nil {
		return err
	}
	defer db.Close()
	if !quiet {
		fmt.Fprintf(ios.Err, "hoist: store %s is up to date: schema version %d\n", path, db.SchemaVersion())
	}
	return db.Close()
}

// ingestSessions ingests a directory of logs, with warnings on stderr and
// progress when stderr is a terminal. always prints the summary even when
// nothing was read.
func ingestSessions(ctx context.Context, ios iostreams.Streams, db *store.DB, dir string, quiet, always bool) (ingest.Stats, error) {
	start := time.Now()
	bar := newBar(ios.Err, quiet, "ingesting")
	st, err := ingest.Dir(ctx, db, dir, ingest.Options{
		Warn: func(err error) { bar.clear(); fmt.Fprintf(ios.Err, "hoist: %v\n", err) },
		Progress: func(p ingest.Progress) {
			bar.set(p.Files, p.FilesTotal, fmt.Sprintf("ingesting %s: %d lines", dir, p.Lines))
		},
	})
	bar.finish()
	if err != nil {
		return st, err
	}
	if !quiet && (always || st.Read > 0) {
		printIngestSummary(ios.Err, st, time.Since(start))
	}
	return st, nil
}

func printIngestSummary(w io.Writer, st ingest.Stats, d time.Duration) {
	secs := max(d.Seconds(), 1e-6)
	var notes []string
	note := func(n int, one, many string) {
		if n > 0 {
			notes = append(notes, plural(n, one, many))
		}
	}
	note(st.NotLogs+st.KnownNotLogs, "file is not a session log", "files are not session logs")
	note(st.OrphanFlows, "flow log without its session log", "flow logs without their session log")
	note(st.Malformed, "malformed line skipped", "malformed lines skipped")
	note(st.Failed, "file could not be read", "files could not be read")
	note(st.Torn, "log ended mid-line: the proxy may still be writing it", "logs ended mid-line: the proxy may still be writing them")
	if st.Read == 0 && st.NotLogs == 0 && st.Failed == 0 && st.OrphanFlows == 0 {
		fmt.Fprintf(w, "hoist: nothing new to ingest: %s unchanged", plural(st.Unchanged, "file", "files"))
		if len(notes) > 0 {
			fmt.Fprintf(w, " (%s)", strings.Join(notes, ", "))
		}
		fmt.Fprintf(w, " (%s)\n", d.Round(time.Millisecond))
		return
	}
	parts := []string{fmt.Sprintf("%d unchanged", st.Unchanged)}
	if st.FlowLogs > 0 {
		parts = append(parts, fmt.Sprintf("%s: %s, %s", plural(st.FlowLogs, "flow log", "flow logs"),
			plural(st.Runs, "run", "runs"), plural(st.Decisions, "decision", "decisions")))
	}
	parts = append(parts, notes...)
	fmt.Fprintf(w, "hoist: %s written from %s read (%s) in %s: %s, %.0f lines/s, %.1f MB/s\n",
		plural(st.Sessions, "session", "sessions"), plural(st.Read, "file", "files"), strings.Join(parts, ", "),
		d.Round(time.Millisecond), plural(int(st.Lines), "line", "lines"), float64(st.Lines)/secs, float64(st.Bytes)/1e6/secs)
}

// plural returns "1 thing" or "n things".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// noteBadSessions says how many of the store's sessions have bad lines, so
// that a command run long after the ingest that named them still says so
// (once, not line by line).
func noteBadSessions(ctx context.Context, ios iostreams.Streams, db *store.DB, quiet bool) {
	if quiet {
		return
	}
	n, err := db.BadSessions(ctx, episode.Filter{})
	if err != nil || n == 0 {
		return // a store of an older schema keeps no problems
	}
	verb := "sessions have"
	if n == 1 {
		verb = "session has"
	}
	fmt.Fprintf(ios.Err, "hoist: %d %s bad lines (hoist sessions --problems)\n", n, verb)
}

// bar is a progress bar on a terminal, and nothing elsewhere or with
// --quiet (issue 3, point 7).
type bar struct {
	pb *progressbar.ProgressBar
}

func newBar(w io.Writer, quiet bool, desc string) *bar {
	if quiet || !iostreams.IsTerminal(w) {
		return &bar{}
	}
	return &bar{pb: progressbar.NewOptions64(-1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("files"),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetWidth(30),
	)}
}

func (b *bar) set(n, total int, desc string) {
	if b.pb == nil {
		return
	}
	if total > 0 && b.pb.GetMax64() != int64(total) {
		b.pb.ChangeMax(total)
	}
	b.pb.Describe(desc)
	_ = b.pb.Set(n)
}

func (b *bar) clear() {
	if b.pb != nil {
		_ = b.pb.Clear()
	}
}

func (b *bar) finish() {
	if b.pb != nil {
		_ = b.pb.Finish()
	}
}

// badInputError makes a command that finished exit 3.
func badInputError() error {
	return &exitCodeError{code: ExitBadInput, err: errors.New("done, but some input was bad (named above)")}
}
