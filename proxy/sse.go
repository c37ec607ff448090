package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
)

// event is one server-sent event (WHATWG rules, as docs/mcp-wire.md §4.2
// summarizes them).
type event struct {
	Name  string // "" means "message"
	ID    string
	Data  []byte
	Retry string
}

// sseReader reads events from a text/event-stream body.
type sseReader struct {
	br  *bufio.Reader
	max int
}

func newSSEReader(r io.Reader, max int) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, 8<<10), max: max}
}

// errEventTooLarge is returned for an event whose data passes the limit.
var errEventTooLarge = errors.New("event larger than --max-frame-bytes")

// next returns the next event with data, or io.EOF at the end of the
// stream. Events without data (comments, priming events) are skipped.
func (s *sseReader) next() (event, error) {
	var ev event
	var data bytes.Buffer
	hasData := false
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && hasData {
				ev.Data = data.Bytes()
				return ev, nil
			}
			return event{}, err
		}
		if len(line) == 0 { // dispatch
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
			ev.ID = value
		case "retry":
			ev.Retry = value
		}
	}
}

// readLine reads one line of any length up to the limit, without its
// terminator (LF, CRLF or CR).
func (s *sseReader) readLine() ([]byte, error) {
	var acc []byte
	for {
		chunk, err := s.br.ReadSlice('\n')
		acc = append(acc, chunk...)
		if len(acc) > s.max+64 {
			return nil, errEventTooLarge
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && len(acc) == 0 {
			return nil, err
		}
		acc = bytes.TrimSuffix(acc, []byte("\n"))
		acc = bytes.TrimSuffix(acc, []byte("\r"))
		return acc, nil
	}
}

// writeEvent writes one message as an SSE event and flushes it.
// The proxy keeps no history of events (manual, "Limits"), so they carry
// no id to resume from.
func writeEvent(w http.ResponseWriter, msg []byte) error {
	var b bytes.Buffer
	b.WriteString("event: message\n")
	b.WriteString("data: ")
	b.Write(msg)
	b.WriteString("\n\n")
	if _, err := w.Write(b.Bytes()); err != nil {
		return err
	}
	return http.NewResponseController(w).Flush()
}

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
