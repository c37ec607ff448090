// Package ingest loads session logs and τ²-bench results into the episode
// store, incrementally and idempotently (DESIGN.md, "Store"; issue 3,
// points 2, 3 and 8).
//
// Dir scans a directory of logs: a log already ingested and unchanged (same
// size and modification time, or else the same content hash) is skipped; one
// that changed is read again whole, with the other logs of its host session.
// The logs of one host session that ran at the same time are merged into one
// episode (hoist-mcp manual, "Several servers"), and once a directory holds
// such a session every log's tools in it are named server::tool. Each
// episode is written in one transaction, so an interrupted ingest leaves
// whole episodes, and two ingests running at once give the store one of each.
//
// The flow log hoist-mcp --flow writes beside a session log
// (<session>.flow.jsonl: decision and run lines) is read with its log and
// written in the same transaction, as the episode's decisions and runs. It
// is incremental as the logs are: a flow log that changed, appeared or went
// has its session read again; an unchanged one is skipped. A malformed
// flow-log line is reported as file:line and skipped, and a flow log
// without its session log is named and skipped.
package ingest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/store"
)

// Options tune an ingest.
type Options struct {
	// Warn is told of each problem that does not stop the ingest: a file
	// that is not a session log, a malformed line, two servers of one name
	// in a host session. It may be called from several goroutines, one at
	// a time.
	Warn func(error)
	// Progress is told, after each unit, how far the ingest has come.
	Progress func(Progress)
	// Workers read logs in parallel; 0 means GOMAXPROCS.
	Workers int
}

// Progress is how far an ingest has come.
type Progress struct {
	Files, FilesTotal int
	Lines, Bytes      int64
}

// Stats say what an ingest did.
type Stats struct {
	// Files are the session-log candidates found (*.jsonl, *.jsonl.zst,
	// sidecars left out).
	Files int
	// Unchanged were skipped; Read were read.
	Unchanged, Read int
	// Sessions are the episodes written.
	Sessions int
	// NotLogs are files that are not session logs, named and skipped;
	// KnownNotLogs were skipped without a word, as an earlier ingest named
	// them and they did not change. Failed could not be read.
	NotLogs, KnownNotLogs, Failed int
	// Malformed lines were reported and skipped; the rest of their logs
	// was ingested.
	Malformed int
	// Torn logs ended mid-line: the proxy may still be writing them, and
	// their last line is read once it is whole.
	Torn         int
	Lines, Bytes int64
	// FlowLogs are the flow logs read beside the session logs, holding
	// Decisions and Runs; OrphanFlows were named and skipped: flow logs
	// without their session log.
	FlowLogs, Decisions, Runs int
	OrphanFlows               int
}

// Problems reports whether this ingest skipped input it named: malformed
// lines, logs that could not be read, files that are not session logs,
// flow logs without their session log.
func (s Stats) Problems() bool {
	return s.Malformed > 0 || s.Failed > 0 || s.NotLogs > 0 || s.OrphanFlows > 0
}

// A batch of host sessions is written in one transaction once it holds
// this many encoded bytes or sessions. Larger batches save little more,
// and a batch holds the store's write lock while it is written, which
// another ingest waits for.
const (
	batchBytes = 8 << 20
	batchUnits = 512
)

// exportMarker is the file hoist export leaves in the directory it writes
// (export.marker; ingest may not import export).
const exportMarker = ".hoist-export"

// sidecars are files beside a log that are not logs themselves.
var sidecars = []string{".context.jsonl", ".flow.jsonl", ".confirm.jsonl", mcplog.GuardsSuffix}

// ownFile reports whether name is a file hoist keeps among the logs that
// ingest does not read: a sidecar, a store, a redacted copy's manifest and
// key.
func ownFile(name string) bool {
	base := strings.TrimSuffix(name, ".zst")
	for _, s := range append(sidecars, ".meta.json") {
		if strings.HasSuffix(base, s) {
			return true
		}
	}
	switch {
	case strings.HasPrefix(name, "hoist.db"), name == "redact-manifest.json", name == "redact.key":
		return true
	}
	return strings.HasPrefix(name, ".")
}

func isCandidate(name string) bool {
	if !strings.HasSuffix(name, ".jsonl") && !strings.HasSuffix(name, ".jsonl.zst") {
		return false
	}
	base := strings.TrimSuffix(name, ".zst")
	for _, s := range sidecars {
		if strings.HasSuffix(base, s) {
			return false
		}
	}
	return true
}

// candidate is one file that may be a session log.
type candidate struct {
	path, dir   string
	size, mtime int64
	other       bool // not named as a session log is
	stored      *store.LogFile
	changed     bool
	header      mcplog.Header
	headerRaw   json.RawMessage
	start, end  int64 // unix ms
	// flow is the flow log beside the log, if any; flowChanged says it
	// differs from what the store recorded of it (or it appeared, or went).
	flow        *flowFile
	flowChanged bool
}

func (c *candidate) hostSession() string {
	if c.stored != nil && !c.changed {
		return c.stored.HostSession
	}
	return c.header.HostSession
}

// Dir ingests every session log under dir (recursively) into db.
func Dir(ctx context.Context, db *store.DB, dir string, opt Options) (Stats, error) {
	var st Stats
	warn := opt.Warn
	if warn == nil {
		warn = func(error) {}
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		return st, err
	}
	info, err := os.Stat(root)
	if err != nil {
		return st, fmt.Errorf("reading sessions: %w", err)
	}
	if !info.IsDir() {
		return st, fmt.Errorf("reading sessions: %s is not a directory", dir)
	}
	byDir := map[string][]*candidate{}
	flows := map[string]*flowFile{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			// An export written among the logs (its .jsonl files are no
			// logs) is left alone: it holds the marker hoist export writes.
			if _, err := os.Stat(filepath.Join(path, exportMarker)); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && strings.HasSuffix(d.Name(), flowSuffix) {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			flows[path] = &flowFile{path: path, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
			return nil
		}
		if !d.Type().IsRegular() || ownFile(d.Name()) && !isCandidate(d.Name()) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		c := &candidate{path: path, dir: filepath.Dir(path), size: fi.Size(), mtime: fi.ModTime().UnixNano(), other: !isCandidate(d.Name())}
		byDir[c.dir] = append(byDir[c.dir], c)
		st.Files++
		return nil
	})
	if err != nil {
		return st, fmt.Errorf("reading sessions: %w", err)
	}
	// Each flow log goes with the session log beside it; one without is
	// named and skipped.
	for _, cs := range byDir {
		for _, c := range cs {
			fp := flowPathOf(c.path)
			if f, ok := flows[fp]; ok {
				c.flow = f
				delete(flows, fp)
			}
		}
	}
	orphans := make([]string, 0, len(flows))
	for p := range flows {
		orphans = append(orphans, p)
	}
	sort.Strings(orphans)
	for _, p := range orphans {
		st.OrphanFlows++
		warn(fmt.Errorf("%s: skipped: a flow log without its session log %s", p, strings.TrimSuffix(p, flowSuffix)+".jsonl"))
	}
	dirs := make([]string, 0, len(byDir))
	for d := range byDir {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)

	var p progress
	p.total = st.Files
	p.fn = opt.Progress
	for _, d := range dirs {
		if err := ingestDir(ctx, db, d, byDir[d], opt, warn, &st, &p); err != nil {
			return st, err
		}
	}
	return st, nil
}

type progress struct {
	mu           sync.Mutex
	files, total int
	lines, bytes int64
	fn           func(Progress)
}

func (p *progress) add(files int, lines, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.files += files
	p.lines += lines
	p.bytes += bytes
	if p.fn != nil {
		p.fn(Progress{Files: p.files, FilesTotal: p.total, Lines: p.lines, Bytes: p.bytes})
	}
}

func ingestDir(ctx context.Context, db *store.DB, dir string, cands []*candidate, opt Options, warn func(error), st *Stats, p *progress) error {
	stored, err := db.Files(ctx, dir)
	if err != nil {
		return err
	}
	storedQualified, err := db.Qualified(ctx, dir)
	if err != nil {
		return err
	}
	storedFlows, err := db.FlowFiles(ctx, dir)
	if err != nil {
		return err
	}
	flowOf := map[string]store.FlowFile{} // by session log
	for _, f := range storedFlows {
		flowOf[f.LogPath] = f
	}
	var touchFlows []store.FlowFile
	for _, c := range cands {
		c.flowChanged, touchFlows = flowChanged(c, flowOf, touchFlows)
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// Which files changed, and the header and time span of each log. The
	// logs that must be peeked at are peeked at in parallel first: with
	// many short logs (τ²-bench's), opening and reading each one's head
	// and tail one after the other was a good part of an ingest's time.
	// What is found is then taken in the files' order, as before.
	peeked := peekAll(cands, stored, workers)
	var logs []*candidate
	var touch, skipped []store.LogFile
	for _, c := range cands {
		s, ok := stored[c.path]
		if ok && s.Status == store.StatusNotALog && s.Size == c.size && s.MtimeUnixNS == c.mtime {
			st.KnownNotLogs++ // named when it was first seen
			p.add(1, 0, 0)
			continue
		}
		if c.other {
			// Not named as a log is: said once, and recorded so that it is
			// not said again while it does not change.
			st.NotLogs++
			p.add(1, 0, 0)
			warn(fmt.Errorf("%s: skipped: not a session log (ingest reads the *.jsonl and *.jsonl.zst logs hoist-mcp --record writes)", c.path))
			skipped = append(skipped, store.LogFile{Path: c.path, Dir: c.dir, Size: c.size, MtimeUnixNS: c.mtime, Status: store.StatusNotALog})
			continue
		}
		if ok && s.Status == store.StatusIngested {
			c.stored = &s
			if s.Size == c.size && s.MtimeUnixNS == c.mtime {
				logs = append(logs, c)
				p.add(1, 0, 0)
				continue
			}
			if s.Size == c.size {
				sum, err := hashFile(c.path)
				if err == nil && sum == s.SHA256 {
					f := s
					f.MtimeUnixNS = c.mtime
					touch = append(touch, f)
					logs = append(logs, c)
					p.add(1, 0, 0)
					continue
				}
			}
		}
		c.changed = true
		err, ok := peeked[c]
		if !ok {
			err = peek(c) // a log of the same size whose hash changed
		}
		if err != nil {
			p.add(1, 0, 0)
			if errors.Is(err, mcplog.ErrNotSessionLog) {
				st.NotLogs++
				warn(fmt.Errorf("%s: skipped: not a hoist-mcp session log", c.path))
				skipped = append(skipped, store.LogFile{Path: c.path, Dir: c.dir, Size: c.size, MtimeUnixNS: c.mtime, Status: store.StatusNotALog})
			} else {
				st.Failed++
				warn(err)
			}
			continue
		}
		logs = append(logs, c)
	}
	if err := db.Touch(ctx, touch); err != nil {
		return fmt.Errorf("recording unchanged logs: %w", err)
	}
	if err := db.Skip(ctx, skipped); err != nil {
		return fmt.Errorf("recording the files that are not session logs: %w", err)
	}
	if err := db.TouchFlows(ctx, touchFlows); err != nil {
		return fmt.Errorf("recording unchanged flow logs: %w", err)
	}

	clusters := cluster(logs)
	qualified := storedQualified
	for _, cl := range clusters {
		if len(cl) > 1 {
			qualified = true
		}
	}
	flip := qualified && !storedQualified
	grouped, err := db.EpisodeFiles(ctx, dir)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, paths := range grouped {
		have[strings.Join(paths, "\x00")] = true
	}
	// A host session is read again when a log or flow log of it changed,
	// or when it must be written whatever the files say (force): its tools
	// are renamed, or its logs regrouped.
	type plan struct {
		logs  []*candidate
		force bool
	}
	var units []plan
	for _, cl := range clusters {
		changed := false
		for _, c := range cl {
			changed = changed || c.changed || c.flowChanged
		}
		force := flip || !have[clusterKey(cl)]
		if changed || force {
			units = append(units, plan{cl, force})
		} else {
			st.Unchanged += len(cl)
		}
	}

	// Workers read, parse and encode host sessions in parallel; one writer
	// stores them, since SQLite has one writer anyway, in batches of whole
	// sessions (store.PutAll): a transaction each would cost more than a
	// short session's rows. The channel bounds how many parsed sessions
	// wait in memory, and a batch how many bytes.
	type parsed struct {
		unit  *store.Unit
		res   unitResult
		files int
	}
	ready := make(chan parsed, workers)
	g, gctx := errgroup.WithContext(ctx)
	var readers sync.WaitGroup
	sem := make(chan struct{}, workers)
	readers.Add(1)
	g.Go(func() error {
		defer readers.Done()
		for _, u := range units {
			select {
			case sem <- struct{}{}:
			case <-gctx.Done():
				return gctx.Err()
			}
			readers.Add(1)
			g.Go(func() error {
				defer readers.Done()
				defer func() { <-sem }()
				unit, res, err := prepareUnit(gctx, u.logs, qualified, u.force)
				if err != nil {
					return err
				}
				if unit != nil {
					// Encoded, the unit waits for its batch without the
					// log's lines, which its events and lines point into.
					unit.Encode()
					unit.Lines = nil
					for _, ep := range unit.Episodes {
						ep.Servers, ep.Tools, ep.Events, ep.Turns = nil, nil, nil, nil
					}
				}
				newFiles := 0
				for _, c := range u.logs {
					if c.changed {
						newFiles++
					}
				}
				select {
				case ready <- parsed{unit, res, newFiles}:
					return nil
				case <-gctx.Done():
					return gctx.Err()
				}
			})
		}
		return nil
	})
	go func() { readers.Wait(); close(ready) }()
	g.Go(func() error {
		var batch []parsed
		size := 0
		flush := func() error {
			var us []*store.Unit
			for _, pu := range batch {
				if pu.unit != nil {
					us = append(us, pu.unit)
				}
			}
			var wrote []bool
			if len(us) > 0 {
				var err error
				if wrote, err = db.PutAll(gctx, us); err != nil {
					return fmt.Errorf("storing the sessions of %s and %d more: %w", us[0].Files[0].Path, len(us)-1, err)
				}
			}
			for _, pu := range batch {
				res := pu.res
				if pu.unit != nil {
					if wrote[0] {
						res.sessions += len(pu.unit.Episodes)
					}
					wrote = wrote[1:]
				}
				for _, w := range res.warnings {
					warn(w)
				}
				st.Read += res.read
				st.Sessions += res.sessions
				st.Malformed += res.malformed
				st.Torn += res.torn
				st.FlowLogs += res.flowLogs
				st.Decisions += res.decisions
				st.Runs += res.runs
				st.Failed += res.failed
				st.Lines += res.lines
				st.Bytes += res.bytes
				p.add(pu.files, res.lines, res.bytes)
			}
			batch, size = batch[:0], 0
			return nil
		}
		for pu := range ready {
			if err := gctx.Err(); err != nil {
				return err
			}
			batch = append(batch, pu)
			if pu.unit != nil {
				size += pu.unit.Size()
			}
			if size >= batchBytes || len(batch) >= batchUnits {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := gctx.Err(); err != nil {
			return err
		}
		return flush()
	})
	if err := g.Wait(); err != nil {
		for range ready {
		}
		return err
	}
	if flip {
		if err := db.SetQualified(ctx, dir); err != nil {
			return fmt.Errorf("recording that %s holds several servers' sessions: %w", dir, err)
		}
	}
	return nil
}

func clusterKey(cl []*candidate) string {
	paths := make([]string, len(cl))
	for i, c := range cl {
		paths[i] = c.path
	}
	sort.Strings(paths)
	return strings.Join(paths, "\x00")
}

// cluster groups logs into host sessions: the logs of one host session that
// ran at the same time (their spans overlap, transitively) are one session
// (manual, "Several servers"). A log without a host session is alone.
func cluster(logs []*candidate) [][]*candidate {
	byHost := map[string][]*candidate{}
	var out [][]*candidate
	for _, c := range logs {
		if h := c.hostSession(); h != "" {
			byHost[h] = append(byHost[h], c)
		} else {
			out = append(out, []*candidate{c})
		}
	}
	hosts := make([]string, 0, len(byHost))
	for h := range byHost {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		cs := byHost[h]
		for _, c := range cs {
			if !c.changed {
				c.start, c.end = c.stored.StartedUnixMS, c.stored.StartedUnixMS+c.stored.EndMS
			}
		}
		sort.SliceStable(cs, func(i, j int) bool {
			if cs[i].start != cs[j].start {
				return cs[i].start < cs[j].start
			}
			return cs[i].path < cs[j].path
		})
		var cur []*candidate
		var end int64
		for _, c := range cs {
			if len(cur) > 0 && c.start > end {
				out = append(out, cur)
				cur = nil
			}
			if len(cur) == 0 {
				end = c.end
			}
			cur = append(cur, c)
			end = max(end, c.end)
		}
		if len(cur) > 0 {
			out = append(out, cur)
		}
	}
	return out
}

// peekAll peeks, on workers goroutines, at each candidate the loop of
// ingestDir will find changed: a session log the store has not recorded as
// ingested with its size and time. It returns each one's error (nil when
// peek succeeded); the others are not in the map, and not read.
func peekAll(cands []*candidate, stored map[string]store.LogFile, workers int) map[*candidate]error {
	var todo []*candidate
	for _, c := range cands {
		s, ok := stored[c.path]
		switch {
		case ok && s.Status == store.StatusNotALog && s.Size == c.size && s.MtimeUnixNS == c.mtime, c.other:
		case ok && s.Status == store.StatusIngested && s.Size == c.size:
			// Unchanged (by its time, or else by its hash) or changed: the
			// loop decides, and peeks itself only when the hash differs.
		default:
			todo = append(todo, c)
		}
	}
	errs := make([]error, len(todo))
	var g errgroup.Group
	g.SetLimit(workers)
	for i, c := range todo {
		g.Go(func() error {
			errs[i] = peek(c)
			return nil
		})
	}
	g.Wait()
	out := make(map[*candidate]error, len(todo))
	for i, c := range todo {
		out[c] = errs[i]
	}
	return out
}

// peek reads a changed log's header and its last line's time, without
// reading the whole file.
func peek(c *candidate) error {
	r, err := mcplog.Open(c.path)
	if err != nil {
		return err
	}
	c.header, c.headerRaw = r.Header(), append(json.RawMessage(nil), r.HeaderRaw()...)
	var last int64
	if strings.HasSuffix(c.path, ".zst") {
		for {
			e, err := r.Next()
			if err != nil && e.Bad == nil {
				break
			}
			if e.Bad == nil || e.Bad.HasTMS {
				last = e.TMS
			}
		}
		r.Close()
	} else {
		r.Close()
		last, err = lastTMS(c.path)
		if err != nil {
			return err
		}
	}
	c.start = c.header.StartedUnixMS
	c.end = c.start + last
	return nil
}

// lastTMS returns the t_ms of the log's last complete line, reading the
// file from its end.
func lastTMS(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	for window := int64(64 << 10); ; window *= 4 {
		off := max(0, size-window)
		buf := make([]byte, size-off)
		if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
			return 0, err
		}
		lines := bytes.Split(buf, []byte("\n"))
		if off > 0 {
			lines = lines[1:] // the first may be partial
		}
		for i := len(lines) - 1; i >= 0; i-- {
			l := bytes.TrimRight(lines[i], "\r")
			if !jsontext.ValidDepth(l, jsontext.MaxDepth+1) {
				continue
			}
			if v, ok := jsontext.Lookup(l, "t_ms"); ok {
				if t, err := strconv.ParseInt(string(v), 10, 64); err == nil {
					return t, nil
				}
			}
		}
		if off == 0 {
			return 0, nil
		}
	}
}

func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, bufio.NewReaderSize(f, 256<<10)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

type unitResult struct {
	read, sessions, malformed, failed int
	torn                              int
	flowLogs, decisions, runs         int
	lines, bytes                      int64
	warnings                          []error
}

// prepareUnit reads the logs of one host session and builds what one
// transaction writes: its episode (or, for two servers of one name, each
// log's), the lines beside it, and the files. The unit is nil when no log
// could be read. With force, the unit is written even when the store has
// recorded its files as they are, unless a log changed (another ingest
// that recorded it wrote the unit too).
func prepareUnit(ctx context.Context, cl []*candidate, qualified, force bool) (*store.Unit, unitResult, error) {
	var res unitResult
	type loaded struct {
		c  *candidate
		rl *readLog
	}
	var ls []loaded
	for _, c := range cl {
		if err := ctx.Err(); err != nil {
			return nil, res, err
		}
		rl, err := readWhole(c.path)
		if err != nil {
			res.failed++
			res.warnings = append(res.warnings, err)
			continue
		}
		res.read++
		res.lines += int64(rl.lines)
		res.bytes += rl.size
		for _, ie := range rl.malformed {
			res.malformed++
			res.warnings = append(res.warnings, fmt.Errorf("%w (line skipped; the rest of the log is ingested)", ie))
		}
		if rl.log.Torn {
			res.torn++
		}
		ls = append(ls, loaded{c, rl})
	}
	if len(ls) == 0 {
		return nil, res, nil
	}
	// FromLogs orders logs by start; so do the wire lines' server indexes.
	sort.SliceStable(ls, func(i, j int) bool {
		return ls[i].rl.log.Header.StartedUnixMS < ls[j].rl.log.Header.StartedUnixMS
	})
	unit := store.Unit{Lines: map[string][]store.WireLine{}, Flows: map[string]*store.Flow{}, Force: force}
	for _, l := range ls {
		if l.c.changed {
			unit.Force = false
		}
		unit.Files = append(unit.Files, fileRecord(l.c, l.rl))
		unit.Problems = append(unit.Problems, problems(l.rl.malformed)...)
	}
	// The flow log beside each log, read whole; server i of the merged
	// episode is ls[i].
	flowsOf := make([]*readFlow, len(ls))
	for i, l := range ls {
		if l.c.flow == nil {
			continue
		}
		rf, err := readFlowLog(l.c.flow, l.c.path, l.rl.log.Header.Session, i)
		if err != nil {
			res.failed++
			res.warnings = append(res.warnings, err)
			continue
		}
		res.flowLogs++
		for _, ie := range rf.malformed {
			res.malformed++
			res.warnings = append(res.warnings, fmt.Errorf("%w (line skipped; the rest of the flow log is ingested)", ie))
		}
		unit.Problems = append(unit.Problems, problems(rf.malformed)...)
		flowsOf[i] = rf
		unit.FlowFiles = append(unit.FlowFiles, rf.file)
	}
	addFlow := func(id string, rf *readFlow, server int) {
		if rf == nil {
			return
		}
		fl := unit.Flows[id]
		if fl == nil {
			fl = &store.Flow{}
			unit.Flows[id] = fl
		}
		for _, d := range rf.flow.Decisions {
			d.Server = server
			fl.Decisions = append(fl.Decisions, d)
		}
		for _, r := range rf.flow.Runs {
			r.Server = server
			fl.Runs = append(fl.Runs, r)
		}
		res.decisions += len(rf.flow.Decisions)
		res.runs += len(rf.flow.Runs)
	}
	logs := make([]*mcplog.Log, len(ls))
	for i, l := range ls {
		logs[i] = l.rl.log
	}
	ep, err := episode.FromLogs(logs, episode.Options{Qualify: qualified})
	switch {
	case errors.Is(err, episode.ErrSameServerName):
		// Two servers of one name at once cannot be told apart: keep the
		// logs apart, and say so (manual, "Several servers").
		res.warnings = append(res.warnings, fmt.Errorf("%w; keeping its logs apart (name the servers with hoist-mcp --server-name)", err))
		for i, l := range logs {
			one, err := episode.FromLog(l, episode.Options{Qualify: true})
			if err != nil {
				res.failed++
				res.warnings = append(res.warnings, fmt.Errorf("%s: %w", l.Path, err))
				continue
			}
			unit.Episodes = append(unit.Episodes, one)
			unit.Lines[one.ID] = wireLines(0, ls[i].rl)
			addFlow(one.ID, flowsOf[i], 0)
		}
	case err != nil:
		res.failed += len(logs)
		res.warnings = append(res.warnings, fmt.Errorf("%s: %w", logs[0].Path, err))
		return nil, res, nil
	default:
		unit.Episodes = []*episode.Episode{ep}
		for i, l := range ls {
			unit.Lines[ep.ID] = append(unit.Lines[ep.ID], wireLines(i, l.rl)...)
			addFlow(ep.ID, flowsOf[i], i)
		}
	}
	return &unit, res, nil
}

func fileRecord(c *candidate, rl *readLog) store.LogFile {
	h := rl.log.Header
	var last int64
	if n := len(rl.log.Entries); n > 0 {
		last = rl.log.Entries[n-1].TMS
	}
	f := store.LogFile{
		Path: c.path, Dir: c.dir, Size: rl.size, MtimeUnixNS: c.mtime, SHA256: rl.sha, Status: store.StatusIngested,
		Session: h.Session, HostSession: h.HostSession, ServerName: h.ServerName,
		StartedUnixMS: h.StartedUnixMS, EndMS: last, Lines: int64(rl.lines),
	}
	if len(rl.log.HeaderRaw) > 0 {
		f.Header.String, f.Header.Valid = string(rl.log.HeaderRaw), true
	}
	if len(rl.malformed) > 0 {
		f.Message = fmt.Sprintf("%d malformed lines skipped", len(rl.malformed))
	}
	return f
}

// flowChanged reports whether the flow log beside c differs from what the
// store recorded beside it (flowOf, by session log): it appeared, went, or
// changed. A flow log touched but unchanged (same size and hash) is added to
// touch, so the next ingest skips it on size and time alone.
func flowChanged(c *candidate, flowOf map[string]store.FlowFile, touch []store.FlowFile) (bool, []store.FlowFile) {
	s, ok := flowOf[c.path]
	switch {
	case c.flow == nil:
		return ok, touch
	case !ok || s.Path != c.flow.path:
		return true, touch
	case s.Size == c.flow.size && s.MtimeUnixNS == c.flow.mtime:
		return false, touch
	case s.Size == c.flow.size:
		if sum, err := hashFile(c.flow.path); err == nil && sum == s.SHA256 {
			s.MtimeUnixNS = c.flow.mtime
			return false, append(touch, s)
		}
	}
	return true, touch
}

// problems are the store's records of a file's bad lines.
func problems(errs []*mcplog.InputError) []store.Problem {
	out := make([]store.Problem, 0, len(errs))
	for _, ie := range errs {
		msg := "bad input"
		if ie.Err != nil {
			msg = ie.Err.Error()
		}
		out = append(out, store.Problem{Path: ie.File, Line: ie.Line, Field: ie.Field, Message: msg})
	}
	return out
}
