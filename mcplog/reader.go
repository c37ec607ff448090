package mcplog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"strconv"
	"strings"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/jsontext"
)

// Entry is one line of a session log after the header: one line from the
// wire, or in active mode a proxy or context line (manual, "Log format"),
// or a line that is not an entry at all (Bad).
type Entry struct {
	// Line is the entry's line number in the file, counting the header as
	// line 1.
	Line int
	// TMS is t_ms: when the proxy read the line, in milliseconds after it
	// started.
	TMS int64
	// From is who sent the line: FromClient, FromServer, FromProxy,
	// FromContext, or a value a later proxy writes.
	From string
	// Message is the wire line's JSON value exactly as the file holds it
	// (never re-encoded), or nil when the line was recorded as raw text.
	// Whitespace around the value, such as the \r of a line that ended in
	// CRLF, is in the file but not in Message.
	Message json.RawMessage
	// Raw is the line as text when it was not one JSON value.
	Raw string
	// Extra holds the members this reader does not know, raw, so that
	// nothing in a log is lost; nil when there are none.
	Extra map[string]json.RawMessage
	// Bad is set for a line of the log that is not an entry (Next returned
	// it with its *InputError); the members above are then unset, but for
	// Line, and TMS and From when they could be read.
	Bad *BadLine

	// valid is set when the Reader validated Message as part of its line,
	// so that Classify and Messages need not validate it again; wire is
	// what Classify found, kept for the next reader of the entry.
	valid bool
	wire  *jsonrpc.Message
}

// Classify classifies the entry's wire line (jsonrpc.Classify), without
// validating again a message the Reader validated with its line, and
// classifies such a line once however many times it is asked: ingest's
// episode builder and its wire lines both read every entry. Use it, not
// jsonrpc.Classify of Message, where lines are read by the million. It
// keeps what it found in the entry, so it is not safe to call on one Entry
// from two goroutines at once.
func (e *Entry) Classify() jsonrpc.Message {
	if e.wire != nil {
		return *e.wire
	}
	if !e.valid {
		return jsonrpc.Classify(e.Message)
	}
	m := jsonrpc.ClassifyValid(e.Message)
	e.wire = &m
	return m
}

// Messages yields the JSON-RPC messages of the entry's wire line
// (jsonrpc.Messages), validated and classified once, as Classify is.
func (e *Entry) Messages() iter.Seq[jsonrpc.Message] {
	if !e.valid {
		return jsonrpc.Messages(e.Message)
	}
	if m := e.Classify(); m.Kind != jsonrpc.Batch {
		return func(yield func(jsonrpc.Message) bool) { yield(m) }
	}
	return jsonrpc.MessagesValid(e.Message)
}

// IsRaw reports whether the line was recorded as raw text.
func (e *Entry) IsRaw() bool { return e.Message == nil && e.Bad == nil }

// BadLine is a log line that is not an entry: its text, and what a
// tolerant reading of it found, so that nothing of it is lost and an
// episode can tell which call a damaged answer was for.
type BadLine struct {
	// Text is the line as text (invalid UTF-8 replaced).
	Text string
	// HasTMS is true when t_ms could be read (it is then in Entry.TMS).
	HasTMS bool
	// ID is the id of the wire message the line holds, when it could be
	// read; Response is true when that message looks like a response (it
	// has a result or an error member, and no method).
	ID       json.RawMessage
	Response bool
	// Err is the problem, as Next returned it.
	Err *InputError
}

// Reader reads a session log one entry at a time, streaming: lines of any
// length, no whole-file buffer, plain or compressed with zstd. A line that
// is not an entry costs that line only: Next returns it as an *InputError
// naming the file, line and field, with an Entry describing it (Bad), and
// goes on with the next line, as encoding/csv goes on after a bad record.
// A torn last line (no final newline, and not an entry), which a proxy
// killed mid-write or still writing leaves, ends the log without an error;
// Torn reports it.
//
// A Reader is not safe for concurrent use.
type Reader struct {
	records
	closer    io.Closer
	header    Header
	headerRaw json.RawMessage
	spans     []jsontext.Span // the members of the line being parsed
	parse     func([]byte) (Entry, *InputError)
}

// NewReader reads the header from r and returns a Reader positioned at the
// first entry. name is the file name used in errors; content that starts
// with zstd's magic number, or a name ending in .zst, is decompressed as it
// is read. A first line that is not a hoist_mcp_log header gives an error
// wrapping ErrNotSessionLog; a header that is one but is malformed gives an
// *InputError naming the field. Close the Reader when done.
func NewReader(r io.Reader, name string) (*Reader, error) {
	dr, closer, err := decompress(r, name)
	if err != nil {
		return nil, err
	}
	rd := &Reader{closer: closer}
	rd.parse = rd.parseEntry
	if br, ok := dr.(*bufio.Reader); ok {
		rd.records = records{name: name, br: br} // the borrowed buffer
	} else {
		// A decompressor: its output is read through a buffer of its own,
		// borrowed too.
		br := borrowReader(dr)
		rd.records = records{name: name, br: br}
		rd.closer = closers{dec: closer, buf: &bufCloser{br: br}}
	}
	line, complete, err := rd.readLine()
	if err == io.EOF && len(line) == 0 {
		rd.Close()
		return nil, &InputError{File: name, Err: fmt.Errorf("%w: the file is empty", ErrNotSessionLog)}
	}
	if err != nil && err != io.EOF {
		rd.Close()
		return nil, fmt.Errorf("reading session header of %s: %w", name, err)
	}
	if err := rd.parseHeader(line, complete); err != nil {
		rd.Close()
		return nil, err
	}
	return rd, nil
}

// Open opens the session log at path for reading (see NewReader). Close the
// Reader when done.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening session log: %w", err)
	}
	rd, err := NewReader(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	rd.closer = closers{dec: rd.closer, f: f}
	return rd, nil
}

// Close releases what the Reader holds: a decompressor, and the file Open
// opened. It is safe to call more than once.
func (r *Reader) Close() error {
	if r.closer == nil {
		return nil
	}
	c := r.closer
	r.closer = nil
	// The buffer goes back to the pool: a Next after Close must not read
	// through it.
	r.br = bufio.NewReaderSize(closedLog{}, 16)
	return c.Close()
}

// closedLog is what a closed Reader reads.
type closedLog struct{}

func (closedLog) Read([]byte) (int, error) { return 0, errors.New("reading a closed session log") }

// Name returns the file name the Reader reports in errors.
func (r *Reader) Name() string { return r.name }

// Header returns the log's header.
func (r *Reader) Header() Header { return r.header }

// HeaderRaw returns the header line as the file holds it, with any members
// Header does not know.
func (r *Reader) HeaderRaw() json.RawMessage { return r.headerRaw }

// Torn reports whether the log ended in a torn line, which Next skipped.
// It is known once Next has returned io.EOF.
func (r *Reader) Torn() bool { return r.torn }

// Lines returns how many lines the Reader has read, the header included.
func (r *Reader) Lines() int { return r.line }

// Next returns the next entry, or io.EOF after the last one. A line that
// is not an entry gives an *InputError and an Entry whose Bad describes
// the line; the next call reads on after it. Any other error ends the log.
func (r *Reader) Next() (Entry, error) {
	return nextParsed(&r.records, "session log", r.parse, salvage)
}

func (e *Entry) setLine(n int) { e.Line = n }

// numbered is a record that knows its line number: *Entry, *FlowLine.
type numbered[T any] interface {
	*T
	setLine(n int)
}

// records reads the lines of a JSONL log one record at a time: what the
// session log's Reader and the FlowReader share (line counts, blank lines,
// a torn last line, errors that name the file and line, reading on after a
// bad line).
type records struct {
	name string
	br   *bufio.Reader
	line int
	torn bool
	done bool
	// arena holds the lines read, one after the other: a line's record
	// aliases it, and a chunk is allocated now and then rather than a slice
	// per line.
	arena []byte
}

func newRecords(r io.Reader, name string) records {
	return records{name: name, br: bufio.NewReaderSize(r, 64<<10)}
}

// nextParsed returns the next record of r as parse reads it, with its line
// number, or io.EOF after the last one; a torn last line ends the log
// there. A line parse refuses is an *InputError with the file and line,
// returned with what bad (when not nil) makes of the line, and the next
// call reads on after it. log names the kind of log in errors.
func nextParsed[T any, P numbered[T]](r *records, log string, parse func([]byte) (T, *InputError), bad func([]byte, int, *InputError) T) (T, error) {
	var zero T
	if r.done {
		return zero, io.EOF
	}
	line, complete, err := r.nextRecord()
	if err != nil {
		r.done = true
		if err == io.EOF {
			return zero, io.EOF
		}
		return zero, fmt.Errorf("reading %s %s: %w", log, r.name, err)
	}
	v, perr := parse(line)
	if perr != nil {
		if torn(complete) {
			r.done, r.torn = true, true
			return zero, io.EOF
		}
		perr.File, perr.Line = r.name, r.line
		if bad != nil {
			return bad(line, r.line, perr), perr
		}
		return zero, perr
	}
	P(&v).setLine(r.line)
	return v, nil
}

// readLine returns the next line without its terminator, and whether it
// had one. At the end of the input it returns io.EOF, with the last line
// when that had no terminator. The line is the caller's to keep (it is no
// slice of the read buffer), and its capacity ends with it.
//
// It is the one line splitter of the session log and the flow log.
func (r *records) readLine() (line []byte, complete bool, err error) {
	line, err = r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		long := bytes.Clone(line) // longer than the buffer: a slice of its own
		for err == bufio.ErrBufferFull {
			line, err = r.br.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	} else {
		line = r.keep(line)
	}
	if len(line) > 0 {
		r.line++
	}
	if err == nil {
		return dropCR(line[:len(line)-1]), true, nil
	}
	return line, false, err
}

// Chunks of the line arena: small for the first lines, since many logs are
// short, then growing to arenaMax.
const (
	arenaMin = 4 << 10
	arenaMax = 256 << 10
)

// keep copies b into the arena and returns the copy.
func (r *records) keep(b []byte) []byte {
	if len(b) > cap(r.arena)-len(r.arena) {
		size := min(max(2*cap(r.arena), arenaMin), arenaMax)
		r.arena = make([]byte, 0, max(size, len(b)))
	}
	start := len(r.arena)
	r.arena = append(r.arena, b...)
	return r.arena[start:len(r.arena):len(r.arena)]
}

// nextRecord returns the next line that holds something (a blank line
// holds nothing; JSONL readers skip it), and whether it had its newline; at
// the end of the input, io.EOF.
func (r *records) nextRecord() (line []byte, complete bool, err error) {
	for {
		line, complete, err = r.readLine()
		if err != nil && (err != io.EOF || len(line) == 0) {
			return nil, false, err
		}
		if !complete || len(bytes.TrimSpace(line)) > 0 {
			return line, complete, nil
		}
	}
}

// torn reports whether a line that did not parse is a torn last line: one
// cut short, with no newline, which a writer killed mid-line or still
// writing leaves. It is not an error (issue 3, point 1; DESIGN.md,
// "Store"), whatever is left of it: the writer ends every line with a
// newline, so a line without one is unfinished even when its bytes make
// whole JSON, and a line that is no entry yet may be one once it is
// finished. (It once was a bad line when whole JSON: the fuzz target found
// a log whose last line read as torn, and as a bad line when the file was
// read a few bytes earlier, as a reader of a log still being written does;
// issue 25, item 5.) A last line without its newline that reads as an
// entry is an entry.
func torn(complete bool) bool {
	return !complete
}

func dropCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return b[:n-1]
	}
	return b
}

func (r *Reader) parseHeader(line []byte, complete bool) error {
	fail := func(field string, err error) error {
		return &InputError{File: r.name, Line: 1, Field: field, Err: err}
	}
	if !jsontext.Valid(line) {
		if !complete && bytes.HasPrefix(bytes.TrimSpace(line), []byte(`{"hoist_mcp_log"`)) {
			return fail("", errors.New("the header line is torn"))
		}
		return fail("", fmt.Errorf("%w: the first line is not a hoist_mcp_log header", ErrNotSessionLog))
	}
	if jsontext.Kind(line) != '{' {
		return fail("", fmt.Errorf("%w: the first line is not a JSON object", ErrNotSessionLog))
	}
	v, ok := jsontext.Lookup(line, "hoist_mcp_log")
	if !ok {
		return fail("", fmt.Errorf("%w: the first line has no hoist_mcp_log member", ErrNotSessionLog))
	}
	version, err := strconv.Atoi(string(v))
	if err != nil || version < 1 {
		return fail("hoist_mcp_log", fmt.Errorf("want a version number, got %s", clip(v)))
	}
	if version > Version {
		return fail("hoist_mcp_log", fmt.Errorf("log format version %d is newer than this hoist reads (%d); upgrade hoist", version, Version))
	}
	h, field, err := readHeader(line)
	if err != nil {
		return fail(field, err)
	}
	h.Log = version
	r.header = h
	r.headerRaw = json.RawMessage(line)
	return nil
}

// readHeader reads the header's members (valid JSON), by their exact
// names; session and started_unix_ms are required, and each member must be
// of its type.
func readHeader(line []byte) (h Header, field string, err error) {
	var f fields
	var hasSession, hasStart bool
	f.decode(line, []member{
		{"session", func(f *fields, v []byte) { h.Session, hasSession = f.str("session", v), true }},
		{"started_unix_ms", func(f *fields, v []byte) {
			hasStart = true
			n, err := strconv.ParseInt(string(v), 10, 64)
			switch {
			case err != nil:
				f.want("started_unix_ms", "the start time in Unix milliseconds", v)
			case n < 0:
				f.err = &InputError{Field: "started_unix_ms", Err: fmt.Errorf("want the start time in Unix milliseconds, got %d", n)}
			}
			h.StartedUnixMS = n
		}},
		{"server_command", func(f *fields, v []byte) { h.ServerCommand = f.stringList("server_command", v) }},
		{"domain", func(f *fields, v []byte) { h.Domain = f.strOrNull("domain", v) }},
		{"agent_model", func(f *fields, v []byte) { h.AgentModel = f.strOrNull("agent_model", v) }},
		{"host_session", &h.HostSession}, {"server_name", &h.ServerName}, {"upstream", &h.Upstream},
	})
	switch {
	case f.err != nil:
		return Header{}, f.err.Field, f.err.Err
	case !hasSession:
		return Header{}, "session", errors.New("missing")
	case h.Session == "":
		return Header{}, "session", errors.New("want the session's id, got an empty string")
	case !hasStart:
		return Header{}, "started_unix_ms", errors.New("missing")
	}
	return h, "", nil
}

// parseEntry decodes one entry line. The returned error has no file or
// line yet.
//
// The line is scanned once: validating it finds its members (t_ms, from,
// message), so neither this nor the message's readers scan it again to
// find them, and the message is known valid (Entry.Classify).
func (r *Reader) parseEntry(line []byte) (Entry, *InputError) {
	var e Entry
	// The line wraps a wire message one level deeper than the message,
	// which the writer recorded as JSON when jsontext.Valid took it.
	spans, ok := jsontext.AppendValidMembers(r.spans[:0], line, jsontext.MaxDepth+1)
	r.spans = spans
	if !ok {
		return e, &InputError{Err: errors.New("not a JSON line")}
	}
	if jsontext.Kind(line) != '{' {
		return e, &InputError{Err: errors.New("not a JSON object")}
	}
	var hasT, hasFrom, hasMessage, hasRaw bool
	var bad *InputError
	for _, m := range spans {
		key, val := m.Name(line), m.Value(line)
		switch string(key) {
		case "t_ms":
			n, err := strconv.ParseInt(string(val), 10, 64)
			if err != nil {
				bad = &InputError{Field: "t_ms", Err: fmt.Errorf("want milliseconds as an integer, got %s", clip(val))}
				break
			}
			e.TMS, hasT = n, true
		case "from":
			if val[0] != '"' {
				bad = &InputError{Field: "from", Err: fmt.Errorf("want a string, got %s", clip(val))}
				break
			}
			e.From, hasFrom = jsontext.Unquote(val), true
		case "message":
			e.Message, hasMessage, e.valid = json.RawMessage(val), true, true
		case "raw":
			if val[0] != '"' {
				bad = &InputError{Field: "raw", Err: fmt.Errorf("want a string, got %s", clip(val))}
				break
			}
			e.Raw, hasRaw = jsontext.Unquote(val), true
		default:
			if e.Extra == nil {
				e.Extra = map[string]json.RawMessage{}
			}
			e.Extra[string(key)] = json.RawMessage(val)
		}
		if bad != nil {
			break
		}
	}
	switch {
	case bad != nil:
		return Entry{}, bad
	case !hasT:
		return Entry{}, &InputError{Field: "t_ms", Err: errors.New("missing")}
	case !hasFrom:
		return Entry{}, &InputError{Field: "from", Err: errors.New("missing")}
	case !hasMessage && !hasRaw:
		return Entry{}, &InputError{Field: "message", Err: errors.New("missing (and no raw)")}
	}
	return e, nil
}

// clip shortens a value quoted in an error message.
func clip(b []byte) string {
	const max = 40
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

// ReadAll reads the rest of the log's entries, the entries of bad lines
// included (Entry.Bad); it fails only when the log cannot be read on.
func (r *Reader) ReadAll() ([]Entry, error) {
	var out []Entry
	for {
		e, err := r.Next()
		var ie *InputError
		switch {
		case err == io.EOF:
			return out, nil
		case errors.As(err, &ie) && e.Bad != nil:
			out = append(out, e)
		case err != nil:
			return out, err
		default:
			out = append(out, e)
		}
	}
}

// Log is a whole session log in memory.
type Log struct {
	// Path is the file it was read from.
	Path      string
	Header    Header
	HeaderRaw json.RawMessage
	// Entries are the log's lines after the header, bad ones included
	// (Entry.Bad).
	Entries []Entry
	// Torn is true when the file ended in a torn line, which is left out.
	Torn bool
}

// Bad returns the problems of the log's bad lines, in order.
func (l *Log) Bad() []*InputError {
	var out []*InputError
	for i := range l.Entries {
		if b := l.Entries[i].Bad; b != nil {
			out = append(out, b.Err)
		}
	}
	return out
}

// ReadFile reads the whole session log at path (see Open and Reader).
func ReadFile(path string) (*Log, error) {
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	entries, err := r.ReadAll()
	if err != nil {
		return nil, err
	}
	return &Log{Path: path, Header: r.header, HeaderRaw: r.headerRaw, Entries: entries, Torn: r.torn}, nil
}

// salvage describes a line that is not an entry: its text, and what a
// tolerant reading finds of t_ms, from and the id of the message it holds.
func salvage(line []byte, n int, err *InputError) Entry {
	e := Entry{Line: n, Bad: &BadLine{Text: strings.ToValidUTF8(string(line), "\uFFFD"), Err: err}}
	jsontext.ScanPrefix(line, func(name, v []byte) bool {
		if v == nil {
			return true
		}
		switch string(name) {
		case "t_ms":
			if t, err := strconv.ParseInt(string(v), 10, 64); err == nil {
				e.TMS, e.Bad.HasTMS = t, true
			}
		case "from":
			if n, ok := jsontext.ValueLen(v); ok && n == len(v) && v[0] == '"' {
				e.From = jsontext.Unquote(v)
			}
		case "message":
			hasMethod, hasAnswer := false, false
			jsontext.ScanPrefix(v, func(name, v []byte) bool {
				switch string(name) {
				case "id":
					if n, ok := jsontext.ValueLen(v); ok && n == len(v) {
						e.Bad.ID = json.RawMessage(bytes.Clone(v))
					}
				case "method":
					hasMethod = true
				case "result", "error":
					hasAnswer = true
				}
				return true
			})
			e.Bad.Response = hasAnswer && !hasMethod
		}
		return true
	})
	return e
}
