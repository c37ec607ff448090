package console

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/store"
)

// Source is what the console reads sessions from: a store opened read-only,
// or a directory of logs as proxies write them. Implementations are safe
// for concurrent use.
type Source interface {
	episode.Source
	// Sessions lists the sessions the filter selects, oldest first.
	Sessions(ctx context.Context, f episode.Filter) ([]store.Session, error)
	// Session returns one session with what its flow logs hold; a nil
	// episode when there is no such session.
	Session(ctx context.Context, id string) (*episode.Episode, *store.Session, *store.Flow, error)
	// Logs returns the paths of a session's logs, where the source knows
	// them (a directory does; a store keeps no path the console may read).
	Logs(id string) []string
	// Refresh looks again for new and grown logs and returns the ids of
	// the sessions that changed; a store never changes under the console.
	Refresh(ctx context.Context) ([]string, error)
	// Close releases the source.
	Close() error
}

// StoreSource reads a store, opened read-only: the console never creates,
// migrates or writes a store.
type StoreSource struct{ db *store.DB }

var _ Source = (*StoreSource)(nil)

// OpenStore opens the store at path read-only.
func OpenStore(ctx context.Context, path string) (*StoreSource, error) {
	db, err := store.OpenReadOnly(ctx, path)
	if err != nil {
		return nil, err
	}
	return &StoreSource{db: db}, nil
}

// Episodes streams the store's episodes.
func (s *StoreSource) Episodes(ctx context.Context, f episode.Filter, fn func(*episode.Episode) error) error {
	return s.db.Episodes(ctx, f, fn)
}

// Sessions lists the store's sessions.
func (s *StoreSource) Sessions(ctx context.Context, f episode.Filter) ([]store.Session, error) {
	return s.db.Sessions(ctx, f)
}

// Session reads one session and its flow logs' lines.
func (s *StoreSource) Session(ctx context.Context, id string) (*episode.Episode, *store.Session, *store.Flow, error) {
	ep, row, err := s.db.Episode(ctx, id)
	if err != nil || ep == nil {
		return nil, nil, nil, err
	}
	fl, err := s.db.Flow(ctx, id)
	if err != nil {
		return nil, nil, nil, err
	}
	return ep, row, fl, nil
}

// Logs knows no paths: a store is read as it is, without the files beside
// its logs.
func (s *StoreSource) Logs(string) []string { return nil }

// Refresh finds nothing: the console only reads a store as it is.
func (s *StoreSource) Refresh(context.Context) ([]string, error) { return nil, nil }

// Close closes the store.
func (s *StoreSource) Close() error { return s.db.Close() }

// DirSource reads a directory of session logs as hoist-mcp --record writes
// them, without a store: each log (and the flow log beside it) is read
// through mcplog and made an episode by episode.FromLogs, as ingest does,
// and read again when it grows. That is what lets the console show a
// session while its proxy still records it.
type DirSource struct {
	dir string

	mu       sync.Mutex
	files    map[string]*logFile // by path
	sessions map[string]*dirSession
	byKey    map[string]*dirSession // by dirSession.key
	order    []string               // session ids, oldest first
	qualify  bool
}

var _ Source = (*DirSource)(nil)

type logFile struct {
	size  int64
	mtime time.Time
	log   *mcplog.Log // nil: not a session log
	flow  *store.Flow
	// flowSize and flowMtime are the flow log's, when it exists.
	flowSize  int64
	flowMtime time.Time
	flowBad   int
	flowOff   string // why the flow served nothing, from its off line
}

type dirSession struct {
	ep   *episode.Episode
	row  store.Session
	flow *store.Flow
	key  string // the paths of its logs with their sizes: changes when one grows
	logs []string
}

// OpenDir reads the session logs under dir.
func OpenDir(ctx context.Context, dir string) (*DirSource, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("--sessions %s: no such directory of session logs", dir)
	}
	d := &DirSource{dir: dir, files: map[string]*logFile{}, sessions: map[string]*dirSession{}}
	if _, err := d.Refresh(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// flowLogPath is the flow log hoist-mcp writes beside a session log
// (DESIGN.md, "Flow log").
func flowLogPath(logPath string) string {
	return strings.TrimSuffix(strings.TrimSuffix(logPath, ".zst"), ".jsonl") + ".flow.jsonl"
}

// Refresh reads the logs that appeared or changed since the last call and
// rebuilds their sessions. It returns the ids of the sessions that changed.
func (d *DirSource) Refresh(ctx context.Context) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	seen := map[string]bool{}
	changed := false
	err := filepath.WalkDir(d.dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil // a file that went away mid-walk is read next time
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		name := e.Name()
		if e.IsDir() || !(strings.HasSuffix(name, ".jsonl") || strings.HasSuffix(name, ".jsonl.zst")) {
			return nil
		}
		if old, ok := d.files[p]; ok && old.log == nil {
			seen[p] = true
			return nil // not a session log: a log never becomes one
		}
		fi, err := e.Info()
		if err != nil {
			return nil
		}
		seen[p] = true
		lf := d.files[p]
		grew := lf == nil || lf.size != fi.Size() || !lf.mtime.Equal(fi.ModTime())
		if grew {
			log, err := mcplog.ReadFile(p)
			switch {
			case errors.Is(err, mcplog.ErrNotSessionLog), errors.Is(err, io.EOF):
				if lf == nil && fi.Size() > 0 && !errors.Is(err, io.EOF) {
					d.files[p] = &logFile{size: fi.Size(), mtime: fi.ModTime()}
				}
				return nil
			case err != nil:
				return nil // a log torn in its header is read once it is whole
			}
			if lf == nil {
				lf = &logFile{}
				d.files[p] = lf
			}
			lf.size, lf.mtime, lf.log = fi.Size(), fi.ModTime(), log
			changed = true
		}
		if d.readFlow(lf, flowLogPath(p)) {
			changed = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for p := range d.files {
		if !seen[p] {
			delete(d.files, p)
			changed = true
		}
	}
	if !changed {
		return nil, nil
	}
	return d.rebuild(), nil
}

// readFlow reads the flow log at path into lf when it changed, and reports
// whether it did.
func (d *DirSource) readFlow(lf *logFile, path string) bool {
	fi, err := os.Stat(path)
	if err != nil {
		if lf.flow == nil {
			return false
		}
		lf.flow, lf.flowBad = nil, 0
		return true
	}
	if lf.flow != nil && lf.flowSize == fi.Size() && lf.flowMtime.Equal(fi.ModTime()) {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	fl := &store.Flow{}
	bad, off := 0, ""
	r := mcplog.NewFlowReader(f, path)
	run, idx := 0, 0
	for {
		line, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var ie *mcplog.InputError
		if errors.As(err, &ie) {
			bad++
			continue
		}
		if err != nil {
			break
		}
		// The reader's lines share its buffer; the session keeps its own.
		n := line.Line
		if line, err = mcplog.ParseFlowLine(bytes.Clone(line.Raw)); err != nil {
			bad++
			continue
		}
		line.Line = n
		switch {
		case line.Off != nil:
			off = line.Off.Reason
		case line.Decision != nil:
			fl.Decisions = append(fl.Decisions, store.Decision{Session: lf.log.Header.Session, Run: run, Index: idx, Line: line.Line, FlowDecision: *line.Decision, Raw: string(line.Raw)})
			idx++
		case line.Run != nil:
			fl.Runs = append(fl.Runs, store.Run{Session: lf.log.Header.Session, Index: len(fl.Runs), Line: line.Line, FlowRun: *line.Run, Raw: string(line.Raw)})
			run, idx = run+1, 0
		}
	}
	lf.flow, lf.flowSize, lf.flowMtime, lf.flowBad, lf.flowOff = fl, fi.Size(), fi.ModTime(), bad, off
	return true
}

// rebuild groups the logs into host sessions and makes an episode of each
// group that changed. It returns the ids of those sessions.
func (d *DirSource) rebuild() []string {
	var logs []*mcplog.Log
	byPath := map[string]*logFile{}
	for p, lf := range d.files {
		if lf.log != nil {
			logs = append(logs, lf.log)
			byPath[p] = lf
		}
	}
	sort.Slice(logs, func(i, j int) bool { return logs[i].Path < logs[j].Path })
	groups := episode.HostSessions(logs)
	qualify := false
	for _, g := range groups {
		qualify = qualify || len(g) > 1
	}
	all := qualify != d.qualify
	d.qualify = qualify
	next := map[string]*dirSession{}
	var changed []string
	for _, g := range groups {
		var key strings.Builder
		for _, l := range g {
			lf := byPath[l.Path]
			fmt.Fprintf(&key, "%s:%d:%d;", l.Path, lf.size, lf.flowSize)
		}
		// A group none of whose logs changed keeps its episode: only what
		// grew is read into an episode again.
		if old, ok := d.byKey[key.String()]; ok && !all {
			next[old.ep.ID] = old
			continue
		}
		ep, err := episode.FromLogs(g, episode.Options{Qualify: qualify})
		if err != nil || ep == nil {
			continue
		}
		s := &dirSession{ep: ep, key: key.String(), flow: &store.Flow{}}
		for _, l := range g {
			s.logs = append(s.logs, l.Path)
		}
		bad, off := 0, ""
		for i, l := range g {
			lf := byPath[l.Path]
			bad += len(l.Bad()) + lf.flowBad
			if lf.flowOff != "" {
				off = lf.flowOff
			}
			if lf.flow != nil {
				for _, dec := range lf.flow.Decisions {
					dec.Server = i
					s.flow.Decisions = append(s.flow.Decisions, dec)
				}
				s.flow.Runs = append(s.flow.Runs, lf.flow.Runs...)
			}
		}
		s.row = sessionRow(ep, bad, s.flow)
		s.row.FlowOff = off
		next[ep.ID] = s
		changed = append(changed, ep.ID)
	}
	for id := range d.sessions {
		if _, ok := next[id]; !ok {
			changed = append(changed, id)
		}
	}
	d.sessions = next
	d.byKey = make(map[string]*dirSession, len(next))
	for _, s := range next {
		d.byKey[s.key] = s
	}
	d.order = d.order[:0]
	for id := range next {
		d.order = append(d.order, id)
	}
	sort.Slice(d.order, func(i, j int) bool {
		a, b := next[d.order[i]].ep, next[d.order[j]].ep
		if !a.Started.Equal(b.Started) {
			return a.Started.Before(b.Started)
		}
		return a.ID < b.ID
	})
	return changed
}

// sessionRow is the list's row of an episode read from logs: the counts
// the store would keep for it, by the store's own Summarize.
func sessionRow(ep *episode.Episode, bad int, fl *store.Flow) store.Session {
	sum := store.Summarize(ep)
	row := store.Session{
		ID: ep.ID, Source: ep.Source, Domain: ep.Domain, HostSession: ep.HostSession,
		AgentModel: mcplog.StringOrNil(ep.AgentModel), ClientName: ep.ClientName, TaskID: ep.TaskID, Trial: ep.Trial, Reward: ep.Reward,
		Started: ep.Started, DurationMS: sum.DurationMS, Turns: sum.Turns, Calls: sum.Calls, Reads: sum.Reads,
		Writes: sum.Writes, Errors: sum.Errors, Messages: sum.Messages, BadLines: bad,
		Runs: len(fl.Runs), Decisions: len(fl.Decisions),
	}
	for _, sv := range ep.Servers {
		row.Servers = append(row.Servers, sv.Name)
	}
	return row
}

func matches(f episode.Filter, ep *episode.Episode) bool {
	switch {
	case f.Domain != "" && ep.Domain != f.Domain,
		f.HostSession != "" && ep.HostSession != f.HostSession,
		!f.Since.IsZero() && ep.Started.Before(f.Since),
		!f.Until.IsZero() && !ep.Started.Before(f.Until),
		len(f.IDs) > 0 && !slices.Contains(f.IDs, ep.ID):
		return false
	}
	return true
}

// Episodes yields the directory's episodes, oldest first.
func (d *DirSource) Episodes(ctx context.Context, f episode.Filter, fn func(*episode.Episode) error) error {
	d.mu.Lock()
	var eps []*episode.Episode
	for _, id := range d.order {
		if ep := d.sessions[id].ep; matches(f, ep) {
			eps = append(eps, ep)
		}
	}
	d.mu.Unlock()
	for _, ep := range eps {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(ep); err != nil {
			return err
		}
	}
	return nil
}

// Sessions lists the directory's sessions, oldest first.
func (d *DirSource) Sessions(ctx context.Context, f episode.Filter) ([]store.Session, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []store.Session
	for _, id := range d.order {
		if s := d.sessions[id]; matches(f, s.ep) {
			out = append(out, s.row)
		}
	}
	return out, nil
}

// Logs returns the paths of the session's logs.
func (d *DirSource) Logs(id string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.sessions[id]; ok {
		return append([]string(nil), s.logs...)
	}
	return nil
}

// Session returns one session of the directory.
func (d *DirSource) Session(_ context.Context, id string) (*episode.Episode, *store.Session, *store.Flow, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.sessions[id]
	if !ok {
		return nil, nil, nil, nil
	}
	row := s.row
	return s.ep, &row, s.flow, nil
}

// Close does nothing: a directory holds nothing open.
func (d *DirSource) Close() error { return nil }
