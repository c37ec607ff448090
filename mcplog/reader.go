package mcplog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/hoist-mcp/hoist/jsontext"
)

// Entry is one line of a session log after the header: one line from the
// wire, or in active mode a proxy or context line (manual, "Log format").
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
	// Message is the wire line exactly as the file holds it (never
	// re-encoded), or nil when the line was recorded as raw text.
	Message json.RawMessage
	// Raw is the line as text when it was not one JSON value.
	Raw string
	// Extra holds the members this reader does not know, raw, so that
	// nothing in a log is lost; nil when there are none.
	Extra map[string]json.RawMessage
}

// IsRaw reports whether the line was recorded as raw text.
func (e *Entry) IsRaw() bool { return e.Message == nil }

// Reader reads a session log one entry at a time, streaming: lines of any
// length, no whole-file buffer. A torn last line (no final newline, and not
// whole JSON), which a proxy killed mid-write leaves, ends the log
// without an error; Torn reports it. A malformed line anywhere else is an
// *InputError naming the file and line.
//
// A Reader is not safe for concurrent use.
type Reader struct {
	records
	closer    io.Closer
	header    Header
	headerRaw json.RawMessage
}

// NewReader reads the header from r and returns a Reader positioned at the
// first entry. name is the file name used in errors. A first line that is
// not a hoist_mcp_log header gives an error wrapping ErrNotSessionLog.
func NewReader(r io.Reader, name string) (*Reader, error) {
	rd := &Reader{records: newRecords(r, name)}
	line, complete, err := rd.readLine()
	if err == io.EOF && len(line) == 0 {
		return nil, &InputError{File: name, Err: fmt.Errorf("%w: the file is empty", ErrNotSessionLog)}
	}
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("reading session header of %s: %w", name, err)
	}
	if err := rd.parseHeader(line, complete); err != nil {
		return nil, err
	}
	return rd, nil
}

// Open opens the session log at path for reading. A log compressed with
// zstd (path ending in .zst, or starting with zstd's magic number) is
// decompressed as it is read. Close the Reader when done.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening session log: %w", err)
	}
	r, closer, err := decompress(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	rd, err := NewReader(r, path)
	if err != nil {
		closer.Close()
		return nil, err
	}
	rd.closer = closer
	return rd, nil
}

// Close closes the file Open opened. It is safe to call more than once, and
// on a Reader from NewReader, where it does nothing.
func (r *Reader) Close() error {
	if r.closer == nil {
		return nil
	}
	c := r.closer
	r.closer = nil
	return c.Close()
}

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

// Next returns the next entry, or io.EOF after the last one. After a
// malformed line it returns io.EOF: a session log is read up to its first
// bad line (ingest starts a new Reader after it).
func (r *Reader) Next() (Entry, error) {
	return nextParsed(&r.records, "session log", parseEntry, true)
}

func (e *Entry) setLine(n int) { e.Line = n }

// numbered is a record that knows its line number: *Entry, *FlowLine.
type numbered[T any] interface {
	*T
	setLine(n int)
}

// records reads the lines of a JSONL log one record at a time: what the
// session log's Reader and the FlowReader share (line counts, blank lines,
// a torn last line, errors that name the file and line).
type records struct {
	name string
	br   *bufio.Reader
	line int
	torn bool
	done bool
}

func newRecords(r io.Reader, name string) records {
	return records{name: name, br: bufio.NewReaderSize(r, 64<<10)}
}

// nextParsed returns the next record of r as parse reads it, with its line
// number, or io.EOF after the last one; a torn last line ends the log there. A line parse
// refuses is an *InputError with the file and line, after which the next
// call reads on, or returns io.EOF when stopAtBad. log names the kind of
// log in errors.
func nextParsed[T any, P numbered[T]](r *records, log string, parse func([]byte) (T, *InputError), stopAtBad bool) (T, error) {
	var zero T
	if r.done {
		return zero, io.EOF
	}
	line, complete, err := nextRecord(r.br, &r.line)
	if err != nil {
		r.done = true
		if err == io.EOF {
			return zero, io.EOF
		}
		return zero, fmt.Errorf("reading %s %s: %w", log, r.name, err)
	}
	v, perr := parse(line)
	if perr != nil {
		if torn(line, complete) {
			r.done, r.torn = true, true
			return zero, io.EOF
		}
		r.done = stopAtBad
		perr.File, perr.Line = r.name, r.line
		return zero, perr
	}
	P(&v).setLine(r.line)
	return v, nil
}

// readLine returns the next line without its terminator, and whether it
// had one. At the end of the input it returns io.EOF, with the last line
// when that had no terminator.
func (r *records) readLine() (line []byte, complete bool, err error) { return nextLine(r.br, &r.line) }

// nextLine is readLine of br, counting lines in *n: the one line splitter
// of the session log and the flow log.
func nextLine(br *bufio.Reader, n *int) (line []byte, complete bool, err error) {
	line, err = br.ReadBytes('\n')
	if len(line) > 0 {
		*n++
	}
	if err == nil {
		return dropCR(line[:len(line)-1]), true, nil
	}
	return line, false, err
}

// nextRecord returns the next line of br that holds something (a blank line
// holds nothing; JSONL readers skip it), and whether it had its newline; at
// the end of the input, io.EOF.
func nextRecord(br *bufio.Reader, n *int) (line []byte, complete bool, err error) {
	for {
		line, complete, err = nextLine(br, n)
		if err != nil && (err != io.EOF || len(line) == 0) {
			return nil, false, err
		}
		if !complete || len(bytes.TrimSpace(line)) > 0 {
			return line, complete, nil
		}
	}
}

// torn reports whether a line that did not parse is a torn last line: cut
// short (no newline) and not whole JSON, which a writer killed mid-line
// leaves. It is not an error (issue 3, point 1; DESIGN.md, "Store"). A
// whole JSON value that is not a record is no torn line, but a malformed
// one.
func torn(line []byte, complete bool) bool { return !complete && !jsontext.Valid(line) }

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
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(line, &probe); err != nil {
		return fail("", fmt.Errorf("%w: the first line is not a JSON object", ErrNotSessionLog))
	}
	v, ok := probe["hoist_mcp_log"]
	if !ok {
		return fail("", fmt.Errorf("%w: the first line has no hoist_mcp_log member", ErrNotSessionLog))
	}
	var version int
	if err := json.Unmarshal(v, &version); err != nil || version < 1 {
		return fail("hoist_mcp_log", fmt.Errorf("want a version number, got %s", clip(v)))
	}
	if version > Version {
		return fail("hoist_mcp_log", fmt.Errorf("log format version %d is newer than this hoist reads (%d); upgrade hoist", version, Version))
	}
	if err := json.Unmarshal(line, &r.header); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fail(te.Field, fmt.Errorf("want %s, got a JSON %s", TypeWord(te.Type), te.Value))
		}
		return fail("", fmt.Errorf("decoding header: %w", err))
	}
	r.headerRaw = json.RawMessage(line)
	return nil
}

// parseEntry decodes one entry line. The returned error has no file or
// line yet.
func parseEntry(line []byte) (Entry, *InputError) {
	var e Entry
	// The line wraps a wire message one level deeper than the message,
	// which the writer recorded as JSON when jsontext.Valid took it.
	if !jsontext.ValidDepth(line, jsontext.MaxDepth+1) {
		return e, &InputError{Err: errors.New("not a JSON line")}
	}
	if bytes.TrimLeft(line, " \t\r\n")[0] != '{' {
		return e, &InputError{Err: errors.New("not a JSON object")}
	}
	var hasT, hasFrom, hasMessage, hasRaw bool
	var bad *InputError
	for key, val := range jsontext.Members(line) {
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
			e.Message, hasMessage = json.RawMessage(val), true
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

// ReadAll reads the rest of the log's entries.
func (r *Reader) ReadAll() ([]Entry, error) {
	var out []Entry
	for {
		e, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
}

// Log is a whole session log in memory.
type Log struct {
	// Path is the file it was read from.
	Path      string
	Header    Header
	HeaderRaw json.RawMessage
	Entries   []Entry
	// Torn is true when the file ended in a torn line, which is left out.
	Torn bool
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
