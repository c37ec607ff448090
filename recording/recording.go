// Package recording reads the requests of recorded sessions with the
// answers they got, and uses them twice: Replayer serves them back as an
// MCP server (hoist-mcp-demo --replay), matching each request to a recorded
// one, and Diff compares two recordings call by call (hoist diff).
//
// It is pure: it reads the logs it is handed (FromLog), or the files it is
// named (ReadFiles, through mcplog), and writes only to the writer it is
// given.
package recording

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// Exchange is one request of a recorded session and the answer it got.
type Exchange struct {
	// Log and Line say where the request is recorded (Line counts the
	// header as line 1); AnswerLine is the answer's line, 0 when the
	// request was never answered.
	Log        string
	Line       int
	AnswerLine int
	// TMS is when the proxy read the request, in ms after it started.
	TMS int64
	// From is who sent the request: mcplog.FromClient (the host) or
	// mcplog.FromProxy (the proxy's own lookups). AnsweredBy is who
	// answered: mcplog.FromServer, or mcplog.FromProxy for an answer the
	// proxy gave the host itself (a guard's refusal, a flow's lookup).
	From, AnsweredBy string
	// Method is the request's method; Tool and Args are a tools/call's
	// name and arguments (raw, nil when absent).
	Method string
	Tool   string
	Args   json.RawMessage
	// Params are the request's params, raw, nil when absent.
	Params json.RawMessage
	// Result and Error are the answer's members, raw; both nil while the
	// request is unanswered.
	Result, Error json.RawMessage
}

// Answered reports whether the request got an answer.
func (x *Exchange) Answered() bool { return x.AnswerLine > 0 }

// Where returns "log:line" of the request.
func (x *Exchange) Where() string { return fmt.Sprintf("%s:%d", x.Log, x.Line) }

// Session is one recorded session log: its header and its exchanges in the
// order their requests were recorded.
type Session struct {
	Path      string
	Header    mcplog.Header
	Exchanges []Exchange
}

// FromLog returns the exchanges of a session log read whole. A request is
// paired with the answer to its id from the other side: the server's
// answer to a request of the host or the proxy, or the proxy's own answer
// to the host. Notifications, server-to-client requests and lines that are
// not JSON-RPC are left out. A log with bad lines is an error naming the
// first (file:line: field: message).
func FromLog(l *mcplog.Log) (*Session, error) {
	if bad := l.Bad(); len(bad) > 0 {
		return nil, bad[0]
	}
	s := &Session{Path: l.Path, Header: l.Header}
	// The requests awaiting an answer, by id: a host request goes to the
	// server (the proxy may answer it instead), and so do the proxy's own,
	// whose ids (hoist-<n>) never collide with the host's.
	pending := map[string]int{} // index into s.Exchanges
	for i := range l.Entries {
		e := &l.Entries[i]
		if e.Message == nil {
			continue
		}
		for m := range e.Messages() {
			switch {
			case m.Kind == jsonrpc.Request && (e.From == mcplog.FromClient || e.From == mcplog.FromProxy):
				x := Exchange{Log: l.Path, Line: e.Line, TMS: e.TMS, From: e.From, Method: m.Method, Params: clone(m.Params)}
				if c, ok := mcpmsg.CallOf(m); ok {
					x.Tool, x.Args = c.Name, clone(c.Args)
				}
				s.Exchanges = append(s.Exchanges, x)
				pending[jsonrpc.IDKey(m.ID)] = len(s.Exchanges) - 1
			case m.Kind == jsonrpc.Response && (e.From == mcplog.FromServer || e.From == mcplog.FromProxy):
				k := jsonrpc.IDKey(m.ID)
				j, ok := pending[k]
				if !ok {
					continue
				}
				x := &s.Exchanges[j]
				if e.From == mcplog.FromProxy && x.From == mcplog.FromProxy {
					continue // the proxy does not answer itself
				}
				delete(pending, k)
				x.AnswerLine, x.AnsweredBy = e.Line, e.From
				x.Result, x.Error = clone(m.Result), clone(m.Error)
			}
		}
	}
	return s, nil
}

// ReadFiles reads the session logs named, in order; a directory stands for
// the session logs in it (*.jsonl and *.jsonl.zst that are session logs),
// by name. A file that is not a session log, or has a bad line, is an error
// naming it.
func ReadFiles(paths []string) ([]*Session, error) {
	var out []*Session
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		files := []string{p}
		if st.IsDir() {
			if files, err = sessionLogs(p); err != nil {
				return nil, err
			}
		}
		for _, f := range files {
			l, err := mcplog.ReadFile(f)
			if err != nil {
				if st.IsDir() && errors.Is(err, mcplog.ErrNotSessionLog) {
					continue // a flow log or another sidecar
				}
				return nil, err
			}
			s, err := FromLog(l)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// sessionLogs lists dir's *.jsonl and *.jsonl.zst files by name.
func sessionLogs(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if e.Type()&fs.ModeType == 0 && (strings.HasSuffix(n, ".jsonl") || strings.HasSuffix(n, ".jsonl.zst")) {
			out = append(out, filepath.Join(dir, n))
		}
	}
	slices.Sort(out)
	return out, nil
}

// clone copies raw bytes that alias a log's line.
func clone(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(slices.Clone(b))
}

// canonical returns the canonical text of a JSON value (members sorted,
// numbers as written: jsontext.Canonical), "" for nil, and the text itself
// when it is not JSON.
func canonical(b []byte) string {
	if b == nil {
		return ""
	}
	if c, ok := jsontext.CanonicalText(b); ok {
		return c
	}
	return string(b)
}
