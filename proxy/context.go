package proxy

import (
	"bytes"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/mcplog"
)

// SessionPath replaces {session} in a path option (--context) with the
// session it belongs to: the host session when the host named one
// (HOIST_SESSION, or the Hoist-Session header with --listen), else the
// session's own id, so that each session can have a file of its own.
func SessionPath(path, session string) string {
	return strings.ReplaceAll(path, "{session}", session)
}

// contextTail reads the lines a host appends to the --context file: the
// conversation, one JSON object per message, which MCP never carries
// (manual, "--context"). Each read returns the complete lines added since
// the last one. The file may appear late, and a file that shrank is read
// again from its start.
type contextTail struct {
	path    string
	mu      sync.Mutex
	off     int64
	partial []byte
}

func (c *contextTail) read() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := os.Open(c.path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil && info.Size() < c.off {
		c.off, c.partial = 0, nil
	}
	if _, err := f.Seek(c.off, io.SeekStart); err != nil {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, 64<<20))
	if err != nil || len(data) == 0 {
		return nil
	}
	c.off += int64(len(data))
	data = append(c.partial, data...)
	var lines [][]byte
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		if l := jsonrpc.TrimLine(data[:i+1]); len(bytes.TrimSpace(l)) > 0 {
			lines = append(lines, bytes.Clone(l))
		}
		data = data[i+1:]
	}
	c.partial = bytes.Clone(data)
	return lines
}

// recordContext logs the conversation's new lines as context entries, just
// before a tools/call is recorded.
func recordContext(c *contextTail, rec *mcplog.Writer, line []byte) {
	if c == nil || rec == nil {
		return
	}
	if m := jsonrpc.Classify(line); m.Kind != jsonrpc.Request || m.Method != "tools/call" {
		return
	}
	for _, l := range c.read() {
		rec.Record(mcplog.FromContext, l)
	}
}
