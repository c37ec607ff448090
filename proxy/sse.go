package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// event is one server-sent event (WHATWG rules, as docs/mcp-wire.md §4.2
// summarizes them).
type event struct {
	Name string // "" means "message"
	Data []byte
}

// sseReader reads events from a text/event-stream body. Like a browser's
// EventSource it keeps what a client resumes a stream with: the id of the
// last event dispatched (an event without data too, such as the priming
// event a 2025-11-25 server opens a stream with) and the reconnection time
// the server last gave.
type sseReader struct {
	br  *bufio.Reader
	max int
	// pending are read bytes after a lone CR, not yet split into lines;
	// skipLF says the last line ended in CR, so an LF next is its end too.
	pending []byte
	skipLF  bool
	// idBuf is the id field last read; lastID takes it at each dispatch.
	idBuf, lastID string
	// retry is the last retry field; retrySet says one came.
	retry    time.Duration
	retrySet bool
}

// LastEventID returns the id a stream cut short resumes from (the
// Last-Event-ID header), "" when no event named one.
func (s *sseReader) LastEventID() string { return s.lastID }

// Retry returns how long the server asked a client to wait before it
// reconnects, and whether it said.
func (s *sseReader) Retry() (time.Duration, bool) { return s.retry, s.retrySet }

func newSSEReader(r io.Reader, max int) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, 8<<10), max: max}
}

// errEventTooLarge is returned for an event whose data passes the limit.
var errEventTooLarge = errors.New("event larger than --max-frame-bytes")

// next returns the next event with data, or io.EOF at the end of the
// stream. Events without data (comments, priming events) are not returned;
// their id and retry fields still count.
func (s *sseReader) next() (event, error) {
	var ev event
	var data bytes.Buffer
	hasData := false
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && hasData {
				s.lastID = s.idBuf
				ev.Data = data.Bytes()
				return ev, nil
			}
			return event{}, err
		}
		if len(line) == 0 { // dispatch
			s.lastID = s.idBuf
			if hasData && data.Len() > 0 {
				ev.Data = data.Bytes()
				return ev, nil
			}
			ev, hasData = event{}, false
			data.Reset()
			continue
		}
		if line[0] == ':' {
			continue // comment, keep-alive
		}
		field, value, _ := strings.Cut(string(line), ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev.Name = value
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.WriteString(value)
			hasData = true
			if data.Len() > s.max {
				return event{}, errEventTooLarge
			}
		case "id":
			if !strings.ContainsRune(value, 0) {
				s.idBuf = value
			}
		case "retry":
			if ms, err := strconv.ParseUint(value, 10, 31); err == nil && value != "" && value[0] != '+' {
				s.retry, s.retrySet = time.Duration(ms)*time.Millisecond, true
			}
		}
	}
}

// readLine reads one line of any length up to the limit, without its
// terminator: LF, CRLF or a lone CR (the WHATWG rules).
func (s *sseReader) readLine() ([]byte, error) {
	var acc []byte
	for {
		chunk, err := s.pending, error(nil)
		s.pending = nil
		if chunk == nil {
			chunk, err = s.br.ReadSlice('\n')
		}
		if s.skipLF && len(chunk) > 0 {
			s.skipLF = false
			if chunk[0] == '\n' {
				chunk = chunk[1:]
			}
		}
		i := bytes.IndexAny(chunk, "\r\n")
		if i < 0 {
			acc = append(acc, chunk...)
			if len(acc) > s.max+64 {
				return nil, errEventTooLarge
			}
			if err == bufio.ErrBufferFull || err == nil {
				continue
			}
			if len(acc) == 0 {
				return nil, err
			}
			return acc, nil // the last line, without its end
		}
		acc = append(acc, chunk[:i]...)
		if len(acc) > s.max+64 {
			return nil, errEventTooLarge
		}
		rest := chunk[i+1:]
		if chunk[i] == '\r' {
			switch {
			case len(rest) > 0 && rest[0] == '\n':
				rest = rest[1:]
			case len(rest) == 0:
				s.skipLF = true // the LF of a CRLF may come with the next read
			}
		}
		if len(rest) > 0 {
			s.pending = rest // still in br's buffer: nothing is read before it is used
		}
		return acc, nil
	}
}

// headDelay is how long a request's event stream waits for its first event
// before its head (status and headers) goes out alone. An answer that comes
// sooner, as most do, goes out in the same write as the head: a write and a
// wake-up of the host fewer per call (issue 13, point 4). A call that runs
// longer still shows the host its stream open long before any client gives
// up waiting for a response's head.
const headDelay = 50 * time.Millisecond

// writeEvent writes one message as an SSE event and flushes it.
// The proxy keeps no history of events (manual, "Limits"), so they carry
// no id to resume from.
//
// The event is put together in a buffer kept from event to event, so that
// it reaches the connection in one write and a large message costs no
// allocation on its way out (issue 13, point 4).
func writeEvent(w http.ResponseWriter, msg []byte) error {
	const head, tail = "event: message\ndata: ", "\n\n"
	bp := eventBufs.Get().(*[]byte)
	b := append(append(append((*bp)[:0], head...), msg...), tail...)
	_, err := w.Write(b)
	if cap(b) <= maxPooledEvent {
		*bp = b[:0]
		eventBufs.Put(bp)
	}
	if err != nil {
		return err
	}
	return http.NewResponseController(w).Flush()
}

// maxPooledEvent is the largest event buffer kept for the next event: an
// outsized message's buffer goes to the collector, not into the pool.
const maxPooledEvent = 1 << 20

var eventBufs = sync.Pool{New: func() any { return new([]byte) }}

// oneLine returns msg as a single wire line: unchanged unless it holds a raw
// line break (a pretty-printed body), which stdio framing forbids; then the
// whitespace between tokens is removed and nothing else changes.
func oneLine(msg []byte) []byte {
	msg = bytes.TrimSpace(msg)
	if bytes.IndexByte(msg, '\n') < 0 && bytes.IndexByte(msg, '\r') < 0 {
		return msg
	}
	var b bytes.Buffer
	if err := json.Compact(&b, msg); err != nil {
		return bytes.ReplaceAll(bytes.ReplaceAll(msg, []byte("\r"), nil), []byte("\n"), []byte(" "))
	}
	return b.Bytes()
}
