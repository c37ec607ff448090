package ingest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"strings"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/store"
)

// lineFeeder hands its reader one line per Read call, hashing and counting
// what it reads. bufio.Reader (inside mcplog.Reader) fills its buffer with
// one Read and finds the line's end in it, so it never holds bytes past the
// line it returns: after the reader stops at a malformed line, the feeder is
// positioned just after that line and a new reader can take over there.
type lineFeeder struct {
	br      *bufio.Reader
	h       hash.Hash
	n       int64 // bytes read from the file
	lines   int   // lines fully handed out
	pending []byte
	last    []byte // the last complete line handed out, without "\n"
	cur     []byte
}

func newLineFeeder(r io.Reader) *lineFeeder {
	h := sha256.New()
	return &lineFeeder{br: bufio.NewReaderSize(io.TeeReader(r, h), 256<<10), h: h}
}

func (f *lineFeeder) Read(p []byte) (int, error) {
	if len(f.pending) == 0 {
		line, err := f.br.ReadSlice('\n')
		f.n += int64(len(line))
		switch {
		case err == bufio.ErrBufferFull:
			f.cur = append(f.cur, line...)
		case err != nil && len(line) == 0:
			return 0, err
		case err == nil:
			f.cur = append(f.cur, line...)
			f.last = append(f.last[:0], bytes.TrimRight(f.cur, "\r\n")...)
			f.cur = f.cur[:0]
			f.lines++
		default: // a torn last line
			f.cur = append(f.cur, line...)
		}
		f.pending = line
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// drain reads the rest of the file into the hash.
func (f *lineFeeder) drain() {
	n, _ := io.Copy(io.Discard, f.br)
	f.n += n
}

func (f *lineFeeder) sum() string { return hex.EncodeToString(f.h.Sum(nil)) }

// readLog is one session log read whole: its entries, the malformed lines
// it skipped (as input errors and as wire lines, so nothing is lost) and
// its fingerprint.
type readLog struct {
	log       *mcplog.Log
	malformed []*mcplog.InputError
	bad       []store.WireLine
	size      int64
	sha       string
	lines     int
}

// readWhole reads the log at path. A malformed line is reported and
// skipped, and reading goes on after it (issue 3, point 8); a torn last line
// ends the log without an error. A file that is not a session log gives an
// error wrapping mcplog.ErrNotSessionLog.
func readWhole(path string) (*readLog, error) {
	if strings.HasSuffix(path, ".zst") {
		return readCompressed(path)
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening session log: %w", err)
	}
	defer file.Close()
	feed := newLineFeeder(file)
	r, err := mcplog.NewReader(feed, path)
	if err != nil {
		return nil, err
	}
	headerLine := append([]byte(nil), feed.last...)
	out := &readLog{log: &mcplog.Log{Path: path, Header: r.Header(), HeaderRaw: r.HeaderRaw()}}
	offset := 0 // lines of the file before the current reader's first entry, less the header
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		var ie *mcplog.InputError
		if errors.As(err, &ie) && ie.Line > 0 && ie.Line+offset == feed.lines {
			ie.Line += offset
			out.malformed = append(out.malformed, ie)
			out.bad = append(out.bad, store.WireLine{Line: ie.Line, From: "", Raw: strings.ToValidUTF8(string(feed.last), "\uFFFD")})
			// Go on with a new reader after the bad line: it counts the
			// header again as line 1.
			offset = feed.lines - 1
			r, err = mcplog.NewReader(io.MultiReader(bytes.NewReader(append(headerLine, '\n')), feed), path)
			if err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		e.Line += offset
		out.log.Entries = append(out.log.Entries, e)
	}
	out.log.Torn = r.Torn()
	feed.drain()
	out.size, out.sha, out.lines = feed.n, feed.sum(), feed.lines
	return out, nil
}

// readCompressed reads a .zst log through mcplog, which decompresses it;
// there a malformed line ends the log.
func readCompressed(path string) (*readLog, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening session log: %w", err)
	}
	h := sha256.New()
	size, err := io.Copy(h, file)
	file.Close()
	if err != nil {
		return nil, fmt.Errorf("reading session log: %w", err)
	}
	r, err := mcplog.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	out := &readLog{log: &mcplog.Log{Path: path, Header: r.Header(), HeaderRaw: r.HeaderRaw()}, size: size, sha: hex.EncodeToString(h.Sum(nil))}
	out.log.Entries, err = r.ReadAll()
	var ie *mcplog.InputError
	if errors.As(err, &ie) {
		out.malformed = append(out.malformed, ie)
	} else if err != nil {
		return nil, err
	}
	out.log.Torn = r.Torn()
	out.lines = len(out.log.Entries) + 1
	return out, nil
}

// wireLines returns the entries of log li an Episode does not model, so
// they are kept beside it: everything but conversation lines, tools/call
// requests and the first response to each.
func wireLines(li int, rl *readLog) []store.WireLine {
	var out []store.WireLine
	open := map[string]bool{}
	for i := range rl.log.Entries {
		e := &rl.log.Entries[i]
		if e.Message != nil {
			if e.From == mcplog.FromContext {
				continue
			}
			m := jsonrpc.Classify(e.Message)
			caller := e.From == mcplog.FromClient || e.From == mcplog.FromProxy
			if m.Kind == jsonrpc.Request && caller && m.Method == "tools/call" {
				open[string(m.ID)] = true
				continue
			}
			if m.Kind == jsonrpc.Response && !caller && open[string(m.ID)] {
				delete(open, string(m.ID))
				continue
			}
		}
		wl := store.WireLine{Server: li, Line: e.Line, TMS: e.TMS, From: e.From, Message: e.Message, Raw: e.Raw}
		out = append(out, wl)
	}
	for _, b := range rl.bad {
		b.Server = li
		out = append(out, b)
	}
	return out
}
