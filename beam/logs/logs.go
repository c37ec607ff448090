// Package logs turns session logs and τ²-bench results files, read through
// any filesystem (an Opener), into episodes, as hoist ingest does without
// the store: a host session's logs that ran at the same time are one
// episode, and a directory that holds such a session names every tool in
// it server::tool (the hoist-mcp manual, "Several servers"). The pipeline
// runs it in three steps, each on any worker: Peek each file (its host
// session and time span), Plan each directory's host sessions (Units), and
// read each Unit's Episodes.
package logs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/mcplog"
)

// Opener opens a file for reading, on whatever filesystem its path names.
type Opener func(ctx context.Context, path string) (io.ReadCloser, error)

// Kinds of File.
const (
	KindLog   = "log"   // a session log candidate (*.jsonl, *.jsonl.zst)
	KindMeta  = "meta"  // a <session>.meta.json sidecar
	KindOwn   = "own"   // another file hoist keeps beside the logs: not read
	KindOther = "other" // not named as a session log is
)

// sidecars are files beside a log that are not logs themselves (as
// hoist ingest keeps them).
var sidecars = []string{".context.jsonl", ".flow.jsonl", ".confirm.jsonl", mcplog.GuardsSuffix}

// Kind says what a file is by its name.
func Kind(path string) string {
	name := Base(path)
	base := strings.TrimSuffix(name, ".zst")
	switch {
	case strings.HasSuffix(name, ".meta.json"):
		return KindMeta
	case strings.HasPrefix(name, "."), strings.HasPrefix(name, "hoist.db"), name == "redact-manifest.json", name == "redact.key":
		return KindOwn
	}
	for _, s := range sidecars {
		if strings.HasSuffix(base, s) {
			return KindOwn
		}
	}
	if strings.HasSuffix(name, ".jsonl") || strings.HasSuffix(name, ".jsonl.zst") {
		return KindLog
	}
	return KindOther
}

// Dir returns the directory of a path or URL (gs://bucket/a/b.jsonl gives
// gs://bucket/a), without cleaning it.
func Dir(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[:i]
	}
	return "."
}

// Base returns the last element of a path or URL.
func Base(path string) string { return path[strings.LastIndexByte(path, '/')+1:] }

// File is what Peek found of one session log: its host session and span.
type File struct {
	Path        string
	HostSession string
	// Start and End are unix milliseconds: the header's start, and that
	// plus the last line's t_ms.
	Start, End int64
}

// Peek reads a session log's header and its last line's time, as hoist
// ingest does before it groups logs into host sessions. A file that is
// not a session log gives an error wrapping mcplog.ErrNotSessionLog.
func Peek(r io.Reader, path string) (File, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return File{}, fmt.Errorf("reading session log %s: %w", path, err)
	}
	rd, err := mcplog.NewReader(bytes.NewReader(data), path)
	if err != nil {
		return File{}, err
	}
	defer rd.Close()
	h := rd.Header()
	var last int64
	if strings.HasSuffix(path, ".zst") {
		for {
			e, err := rd.Next()
			if err != nil && e.Bad == nil {
				break
			}
			if e.Bad == nil || e.Bad.HasTMS {
				last = e.TMS
			}
		}
	} else {
		last = lastTMS(data)
	}
	return File{Path: path, HostSession: h.HostSession, Start: h.StartedUnixMS, End: h.StartedUnixMS + last}, nil
}

// lastTMS returns the t_ms of a plain log's last complete line that has one.
func lastTMS(data []byte) int64 {
	for len(data) > 0 {
		i := bytes.LastIndexByte(data[:len(data)-1], '\n')
		line := bytes.TrimRight(data[i+1:], "\r\n")
		data = data[:i+1]
		if jsontext.ValidDepth(line, jsontext.MaxDepth+1) {
			if v, ok := jsontext.Lookup(line, "t_ms"); ok {
				if t, err := strconv.ParseInt(string(v), 10, 64); err == nil {
					return t
				}
			}
		}
		if i < 0 {
			break
		}
	}
	return 0
}

// Unit is one host session's logs, read into one episode (or one per log,
// when two of its servers have the same name).
type Unit struct {
	Dir string
	// Paths are the logs, by start then path; Metas the .meta.json beside
	// each ("" when there is none).
	Paths, Metas []string
	// Qualified names tools server::tool: the directory holds a host
	// session of several servers.
	Qualified bool
}

// Plan groups the session logs of one directory into host sessions: the
// logs of one host session whose spans overlap (transitively) are one; a
// log without a host session is alone. metas are the directory's
// .meta.json files. Units come in a canonical order.
func Plan(dir string, files []File, metas []string) []Unit {
	hasMeta := map[string]bool{}
	for _, m := range metas {
		hasMeta[m] = true
	}
	byHost := map[string][]File{}
	var clusters [][]File
	for _, f := range files {
		if f.HostSession == "" {
			clusters = append(clusters, []File{f})
			continue
		}
		byHost[f.HostSession] = append(byHost[f.HostSession], f)
	}
	for _, h := range sortedKeys(byHost) {
		fs := byHost[h]
		slices.SortStableFunc(fs, func(a, b File) int {
			if a.Start != b.Start {
				return compare(a.Start, b.Start)
			}
			return strings.Compare(a.Path, b.Path)
		})
		var cur []File
		var end int64
		for _, f := range fs {
			if len(cur) > 0 && f.Start > end {
				clusters = append(clusters, cur)
				cur = nil
			}
			if len(cur) == 0 {
				end = f.End
			}
			cur = append(cur, f)
			end = max(end, f.End)
		}
		if len(cur) > 0 {
			clusters = append(clusters, cur)
		}
	}
	qualified := false
	for _, cl := range clusters {
		qualified = qualified || len(cl) > 1
	}
	units := make([]Unit, 0, len(clusters))
	for _, cl := range clusters {
		u := Unit{Dir: dir, Qualified: qualified}
		for _, f := range cl {
			u.Paths = append(u.Paths, f.Path)
			m := ""
			if mp := episode.MetaPath(f.Path); hasMeta[mp] {
				m = mp
			}
			u.Metas = append(u.Metas, m)
		}
		units = append(units, u)
	}
	slices.SortFunc(units, func(a, b Unit) int { return strings.Compare(a.Paths[0], b.Paths[0]) })
	return units
}

func compare(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Episodes reads a Unit's logs whole and builds its episode, as hoist
// ingest does: one episode of every log, or, when two servers have the
// same name, one of each log. Problems that cost a line or a log are
// passed to warn; the rest of the unit is read. bad is how many lines of
// the unit's logs could not be read (a session's bad_lines).
func Episodes(ctx context.Context, open Opener, u Unit, warn func(error)) (eps []*episode.Episode, bad int) {
	type loaded struct {
		log  *mcplog.Log
		meta string
	}
	var ls []loaded
	for i, path := range u.Paths {
		l, err := readLog(ctx, open, path)
		if err != nil {
			warn(err)
			continue
		}
		for _, ie := range l.Bad() {
			bad++
			warn(fmt.Errorf("%w (line skipped; the rest of the log is read)", ie))
		}
		ls = append(ls, loaded{l, u.Metas[i]})
	}
	if len(ls) == 0 {
		return nil, bad
	}
	slices.SortStableFunc(ls, func(a, b loaded) int { return compare(a.log.Header.StartedUnixMS, b.log.Header.StartedUnixMS) })
	logs := make([]*mcplog.Log, len(ls))
	metas := make([]string, len(ls))
	for i, l := range ls {
		logs[i], metas[i] = l.log, l.meta
	}
	ep, err := episode.FromLogs(logs, episode.Options{Qualify: u.Qualified, NoMeta: true})
	switch {
	case errors.Is(err, episode.ErrSameServerName):
		warn(fmt.Errorf("%w; keeping its logs apart (name the servers with hoist-mcp --server-name)", err))
		var out []*episode.Episode
		for i, l := range logs {
			one, err := episode.FromLog(l, episode.Options{Qualify: true, NoMeta: true})
			if err != nil {
				warn(fmt.Errorf("%s: %w", l.Path, err))
				continue
			}
			if err := applyMeta(ctx, open, one, metas[i:i+1]); err != nil {
				warn(err)
				continue
			}
			out = append(out, one)
		}
		return out, bad
	case err != nil:
		warn(fmt.Errorf("%s: %w", logs[0].Path, err))
		return nil, bad
	}
	if err := applyMeta(ctx, open, ep, metas); err != nil {
		warn(err)
		return nil, bad
	}
	return []*episode.Episode{ep}, bad
}

// applyMeta applies the first of the logs' .meta.json sidecars, as
// episode.FromLogs does.
func applyMeta(ctx context.Context, open Opener, ep *episode.Episode, metas []string) error {
	for _, path := range metas {
		if path == "" {
			continue
		}
		data, err := readAll(ctx, open, path)
		if err != nil {
			return fmt.Errorf("reading session metadata: %w", err)
		}
		m, err := episode.ParseMeta(data, path)
		if err != nil {
			return err
		}
		m.Apply(ep)
		return nil
	}
	return nil
}

func readLog(ctx context.Context, open Opener, path string) (*mcplog.Log, error) {
	rc, err := open(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("opening session log: %w", err)
	}
	defer rc.Close()
	r, err := mcplog.NewReader(rc, path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	l := &mcplog.Log{Path: path, Header: r.Header(), HeaderRaw: r.HeaderRaw()}
	if l.Entries, err = r.ReadAll(); err != nil {
		return nil, err
	}
	l.Torn = r.Torn()
	return l, nil
}

func readAll(ctx context.Context, open Opener, path string) ([]byte, error) {
	rc, err := open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// Tau2 reads a τ²-bench results file's simulations, one episode each, as
// hoist ingest --tau2 does.
func Tau2(ctx context.Context, open Opener, path string, opt episode.Tau2Options, fn func(*episode.Episode) error) error {
	rc, err := open(ctx, path)
	if err != nil {
		return fmt.Errorf("reading τ²-bench results: %w", err)
	}
	defer rc.Close()
	return episode.EachTau2(rc, path, opt, fn)
}
