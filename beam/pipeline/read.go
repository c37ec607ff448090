// Package pipeline holds hoist's Apache Beam pipelines (docs/scale.md):
// Learn, which reads session logs and τ²-bench results by glob through
// Beam's filesystems and runs learn's stages as a combiner, and Export,
// which writes the episode tables as hoist export writes them. Both turn
// files into episodes with the main module's code (beam/logs), never
// through the store.
package pipeline

import (
	"context"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	// The filesystems the pipelines read and write: local paths, gs://
	// and s3://.
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/gcs"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/s3"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/hoist-mcp/hoist/beam/logs"
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/internal/atomicfile"
)

func init() {
	register.DoFn3x1[context.Context, string, func(string), error](&matchFn{})
	register.DoFn3x1[context.Context, string, func(string, dirEntry), error](&peekFn{})
	register.DoFn4x0[context.Context, string, func(*dirEntry) bool, func(logs.Unit)](&planFn{})
	register.Emitter1[string]()
	register.Emitter2[string, dirEntry]()
	register.Emitter1[logs.Unit]()
	register.Iter1[dirEntry]()
	beam.RegisterType(reflect.TypeOf((*dirEntry)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*logs.Unit)(nil)).Elem())
}

var (
	filesRead   = beam.NewCounter("hoist", "files")
	badInput    = beam.NewCounter("hoist", "bad_input")
	episodesOut = beam.NewCounter("hoist", "episodes")
)

// open opens a file through the Beam filesystem its path names (local,
// gs://, s3://).
func open(ctx context.Context, path string) (io.ReadCloser, error) {
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return nil, err
	}
	rc, err := fs.OpenRead(ctx, path)
	if err != nil {
		fs.Close()
		return nil, err
	}
	return closeBoth{rc, fs}, nil
}

type closeBoth struct {
	io.ReadCloser
	fs filesystem.Interface
}

func (c closeBoth) Close() error {
	err := c.ReadCloser.Close()
	c.fs.Close()
	return err
}

// readFile reads a whole file through its filesystem.
func readFile(ctx context.Context, path string) ([]byte, error) {
	rc, err := open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// WriteFile writes a file through its filesystem; a local one atomically,
// as hoist writes its files.
func WriteFile(ctx context.Context, path string, data []byte) error {
	if !strings.Contains(path, "://") {
		return atomicfile.WriteFile(path, data, 0o600)
	}
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return err
	}
	defer fs.Close()
	w, err := fs.OpenWrite(ctx, path)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// warn reports input a pipeline skips, as hoist ingest names it.
func warn(ctx context.Context, err error) {
	badInput.Inc(ctx, 1)
	log.Warnf(ctx, "hoist: %v", err)
}

// matchFn expands a glob into the files it matches, in order.
type matchFn struct{}

func (f *matchFn) ProcessElement(ctx context.Context, glob string, emit func(string)) error {
	fs, err := filesystem.New(ctx, glob)
	if err != nil {
		return err
	}
	defer fs.Close()
	files, err := fs.List(ctx, glob)
	if err != nil {
		return fmt.Errorf("matching %s: %w", glob, err)
	}
	sort.Strings(files)
	for _, p := range files {
		if !strings.Contains(p, "://") {
			// A local glob matches directories too; object stores list objects.
			if fi, err := os.Stat(p); err == nil && fi.IsDir() {
				continue
			}
		}
		emit(p)
	}
	return nil
}

// dirEntry is a file of a directory that planning needs: a session log's
// host session and span, or a .meta.json sidecar.
type dirEntry struct {
	Path        string
	HostSession string
	Start, End  int64
	Meta        bool
}

// peekFn keys each session log and sidecar by its directory, with what
// planning needs of it; other files are named and skipped, as hoist ingest
// does.
type peekFn struct{}

func (f *peekFn) ProcessElement(ctx context.Context, path string, emit func(string, dirEntry)) error {
	switch logs.Kind(path) {
	case logs.KindMeta:
		emit(logs.Dir(path), dirEntry{Path: path, Meta: true})
	case logs.KindOther:
		warn(ctx, fmt.Errorf("%s: skipped: not a session log (hoist reads the *.jsonl and *.jsonl.zst logs hoist-mcp --record writes)", path))
	case logs.KindLog:
		filesRead.Inc(ctx, 1)
		rc, err := open(ctx, path)
		if err != nil {
			warn(ctx, fmt.Errorf("opening session log: %w", err))
			return nil
		}
		defer rc.Close()
		fi, err := logs.Peek(rc, path)
		if err != nil {
			warn(ctx, err)
			return nil
		}
		emit(logs.Dir(path), dirEntry{Path: path, HostSession: fi.HostSession, Start: fi.Start, End: fi.End})
	}
	return nil
}

// planFn groups a directory's logs into host sessions (logs.Plan).
type planFn struct{}

func (f *planFn) ProcessElement(ctx context.Context, dir string, entries func(*dirEntry) bool, emit func(logs.Unit)) {
	var files []logs.File
	var metas []string
	var e dirEntry
	for entries(&e) {
		if e.Meta {
			metas = append(metas, e.Path)
			continue
		}
		files = append(files, logs.File{Path: e.Path, HostSession: e.HostSession, Start: e.Start, End: e.End})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	for _, u := range logs.Plan(dir, files, metas) {
		emit(u)
	}
}

// Sources say which files a pipeline reads.
type Sources struct {
	// Sessions are globs of session logs (and their .meta.json sidecars).
	Sessions []string
	// Tau2 are globs of τ²-bench results files; Tools and ToolSchemas the
	// manifests hoist ingest --tau2 reads with --tools and --tool-schemas.
	Tau2               []string
	Tools, ToolSchemas string
}

// units reads the session logs the globs match into host-session units.
func units(s beam.Scope, globs []string) beam.PCollection {
	s = s.Scope("hoist.sessions")
	paths := beam.ParDo(s, &matchFn{}, beam.CreateList(s, globs))
	byDir := beam.ParDo(s, &peekFn{}, beam.Reshuffle(s, paths))
	return beam.Reshuffle(s, beam.ParDo(s, &planFn{}, beam.GroupByKey(s, byDir)))
}

// tau2Files lists the τ²-bench results files the globs match.
func tau2Files(s beam.Scope, globs []string) beam.PCollection {
	s = s.Scope("hoist.tau2")
	return beam.Reshuffle(s, beam.ParDo(s, &matchFn{}, beam.CreateList(s, globs)))
}

// tau2Options reads the manifests of a τ²-bench ingest, once per worker.
func tau2Options(ctx context.Context, tools, schemas string) (episode.Tau2Options, error) {
	var opt episode.Tau2Options
	if tools != "" {
		data, err := readFile(ctx, tools)
		if err != nil {
			return opt, fmt.Errorf("reading tool kinds: %w", err)
		}
		if opt.Kinds, err = episode.ParseToolKinds(data); err != nil {
			return opt, fmt.Errorf("%s: %w", tools, err)
		}
	}
	if schemas != "" {
		// LoadToolSchemas reads a local file: a remote manifest is copied.
		path := schemas
		if strings.Contains(schemas, "://") {
			data, err := readFile(ctx, schemas)
			if err != nil {
				return opt, fmt.Errorf("reading tool schemas: %w", err)
			}
			tmp, err := os.CreateTemp("", "hoist-tools-*.json")
			if err != nil {
				return opt, err
			}
			defer os.Remove(tmp.Name())
			if _, err := tmp.Write(data); err != nil {
				tmp.Close()
				return opt, err
			}
			if err := tmp.Close(); err != nil {
				return opt, err
			}
			path = tmp.Name()
		}
		var err error
		if opt.Schemas, err = episode.LoadToolSchemas(path); err != nil {
			return opt, err
		}
	}
	return opt, nil
}

// unitEpisodes reads the episodes of a unit of session logs, and how many
// of its lines could not be read.
func unitEpisodes(ctx context.Context, u logs.Unit) ([]*episode.Episode, int) {
	return logs.Episodes(ctx, open, u, func(err error) { warn(ctx, err) })
}
