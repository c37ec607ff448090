package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/store"
)

// counter counts the bytes read through it.
type counter struct {
	r io.Reader
	n int64
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// readLog is one session log read whole: its entries (bad lines among
// them, as mcplog reports them), the problems of its bad lines, and its
// fingerprint.
type readLog struct {
	log       *mcplog.Log
	malformed []*mcplog.InputError
	size      int64
	sha       string
	lines     int
}

// readWhole reads the log at path, plain or compressed. A malformed line
// is reported and costs that line only (issue 3, point 8): the reader goes
// on after it; a torn last line ends the log without an error. A file that
// is not a session log gives an error wrapping mcplog.ErrNotSessionLog.
func readWhole(path string) (*readLog, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening session log: %w", err)
	}
	defer file.Close()
	h := sha256.New()
	c := &counter{r: io.TeeReader(file, h)}
	r, err := mcplog.NewReader(c, path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	out := &readLog{log: &mcplog.Log{Path: path, Header: r.Header(), HeaderRaw: r.HeaderRaw()}}
	out.log.Entries, err = r.ReadAll()
	if err != nil {
		return nil, err
	}
	out.malformed = out.log.Bad()
	out.log.Torn = r.Torn()
	if _, err := io.Copy(io.Discard, c); err != nil { // the rest, for the hash
		return nil, fmt.Errorf("reading session log %s: %w", path, err)
	}
	out.size, out.sha, out.lines = c.n, hex.EncodeToString(h.Sum(nil)), r.Lines()
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
			m := e.Classify()
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
		if e.Bad != nil {
			wl.Raw = e.Bad.Text // a bad line is kept as its text: nothing is lost
		}
		out = append(out, wl)
	}
	return out
}
