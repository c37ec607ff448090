package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// readBufSize is the size of each stream's read buffer. A line longer than
// this is forwarded in pieces as it arrives, never held back whole.
const readBufSize = 256 << 10

// startPeek is how much of a line's first piece onStart is shown: enough
// for the cheap checks it serves, which read a line's first members
// (jsonrpc.LooksLikeMessage says yes to a prefix it cannot finish), and not
// a large message's whole first piece, which such a check would otherwise
// scan to its end on the forwarding path (issue 13, point 4).
const startPeek = 4 << 10

// keepAssembly is the largest line-assembly buffer a pump keeps between lines.
const keepAssembly = 4 << 20

// pump copies one stream line by line, forwarding every byte unchanged and
// in order, and hands each complete line to the recorder just before its
// last byte is forwarded. A line may be of any length: it is forwarded in
// pieces as they arrive, and assembled for the recorder only up to
// maxFrame bytes; past that the stream becomes a raw pipe for good.
type pump struct {
	from     string // mcplog.FromClient or mcplog.FromServer
	src      io.Reader
	dst      io.Writer
	maxFrame int

	// keep is true when complete lines are needed (recording or tracing).
	keep bool
	// onLine is called with each complete line (terminator included) when
	// keep is true, before the line's last piece is forwarded; it owns line.
	onLine func(line []byte)
	// onStart is called with the start of every line (at most startPeek
	// bytes of its first piece), before it is forwarded, for cheap checks
	// that need no whole line.
	onStart func(first []byte)
	// onRaw is called once when the stream turns into a raw pipe.
	onRaw func(size int)
	// intercept, when set, makes the pump forward whole lines only: each
	// complete line goes to intercept (after onLine), which returns true
	// when it takes the line over and false to have it forwarded. A line
	// longer than maxFrame turns the stream into a raw pipe, intercepted no
	// more.
	intercept func(line []byte) bool
	// tooLong, when set, makes the pump fail closed (active mode, issue 23):
	// a line longer than maxFrame, which nothing can inspect, is not
	// forwarded but dropped, and tooLong is given its start (at most
	// startPeek bytes) to answer it; the stream stays whole-line and
	// inspected. Without it such a line turns the stream into a raw pipe.
	tooLong func(start []byte)
}

// errWrite marks an error of the destination, so the caller can tell a
// vanished reader from the end of the source.
type errWrite struct{ err error }

func (e errWrite) Error() string { return "forwarding: " + e.err.Error() }
func (e errWrite) Unwrap() error { return e.err }

// run pumps until the source ends (nil) or a read or write fails.
//
// What is read is forwarded in one write, like cat's, once every line it
// completes has gone to the recorder: when the peer sends several lines at
// once (calls in flight), they cost one write, not one each. A line that
// does not fit the read buffer goes on in pieces as they come (issue 13,
// point 4).
func (p *pump) run() error {
	if p.intercept != nil || p.tooLong != nil {
		return p.runWhole(bufio.NewReaderSize(p.src, readBufSize))
	}
	buf := make([]byte, readBufSize)
	var acc []byte // the current line's pieces so far, when keep
	total := 0     // bytes of the current line so far; 0 before its first
	n := 0         // bytes read into buf, not yet forwarded
	for {
		m, err := p.src.Read(buf[n:])
		n += m
		if err == nil && n < len(buf) && bytes.IndexByte(buf[n-m:n], '\n') < 0 {
			// Only the start of a line so far (buf holds no line end):
			// wait for its end while there is room, so that a line that
			// comes in a few reads is forwarded in one write and handed
			// to the recorder without being assembled.
			continue
		}
		data := buf[:n]
		n = 0
		for rest := data; len(rest) > 0; {
			piece, complete := rest, false
			if i := bytes.IndexByte(rest, '\n'); i >= 0 {
				piece, complete = rest[:i+1], true
			}
			if total == 0 && p.onStart != nil {
				p.onStart(piece[:min(len(piece), startPeek)])
			}
			total += len(piece)
			if total > p.maxFrame && (p.keep || p.onRaw != nil) {
				// Too big to assemble: forward this read and the rest of
				// the stream as it comes, and stop looking at it.
				if p.onRaw != nil {
					p.onRaw(p.maxFrame)
				}
				if werr := writeAll(p.dst, data); werr != nil {
					return werr
				}
				if err != nil {
					return readEnd(err)
				}
				return p.raw(p.src)
			}
			if p.keep {
				switch {
				case !complete:
					acc = append(acc, piece...)
				case len(acc) == 0:
					p.onLine(clone(piece))
				default:
					// A line in pieces is assembled in a buffer kept from
					// line to line, then handed over in one exact copy.
					p.onLine(clone(append(acc, piece...)))
					acc = acc[:0]
					if cap(acc) > keepAssembly {
						acc = nil
					}
				}
			}
			if !complete {
				break
			}
			total = 0
			rest = rest[len(piece):]
		}
		if len(data) > 0 {
			if werr := writeAll(p.dst, data); werr != nil {
				return werr
			}
		}
		if err != nil {
			// At the end a last line without newline is still a line.
			if p.keep && len(acc) > 0 && readEnd(err) == nil {
				p.onLine(clone(acc))
			}
			return readEnd(err)
		}
	}
}

// readEnd returns what a pump returns for a read's error: nil at the end
// of the source, or when the owner stopped waiting for the stream (a
// deadline), else the error.
func readEnd(err error) error {
	if err == io.EOF || errors.Is(err, os.ErrDeadlineExceeded) {
		return nil
	}
	return fmt.Errorf("reading: %w", err)
}

// runWhole pumps whole lines through intercept (active mode).
func (p *pump) runWhole(br *bufio.Reader) error {
	var acc []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(acc) == 0 && len(chunk) > 0 && p.onStart != nil {
			p.onStart(chunk[:min(len(chunk), startPeek)])
		}
		acc = append(acc, chunk...)
		if len(acc) > p.maxFrame && p.tooLong != nil {
			start := bytes.Clone(acc[:min(len(acc), startPeek)])
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n') // the rest of the line, dropped
			}
			acc = acc[:0]
			p.tooLong(start)
			if err != nil {
				return readEnd(err)
			}
			continue
		}
		if len(acc) > p.maxFrame {
			if p.onRaw != nil {
				p.onRaw(p.maxFrame)
			}
			if werr := writeAll(p.dst, acc); werr != nil {
				return werr
			}
			return p.raw(br)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(acc) > 0 {
			line := clone(acc)
			acc = acc[:0]
			if p.onLine != nil {
				// The recorder takes its own copy: line goes on to intercept.
				p.onLine(clone(line))
			}
			if p.intercept == nil || !p.intercept(line) {
				if werr := writeAll(p.dst, line); werr != nil {
					return werr
				}
			}
		}
		if err != nil {
			return readEnd(err)
		}
	}
}

// tooLongError is the proxy's answer to a host line longer than limit,
// which active mode does not forward: a JSON-RPC error to the id read
// from the line's start (under case folding, as a lenient server reads
// it), or to null when the start shows none. ok is false for a line whose
// start shows a notification, which gets no answer.
func tooLongError(start []byte, limit int) (answer []byte, ok bool) {
	var id []byte
	method := false
	end := jsontext.ScanPrefix(start, func(name, value []byte) bool {
		switch {
		case jsontext.FoldsTo(name, "ID"):
			id = value
		case jsontext.FoldsTo(name, "METHOD"):
			method = true
		}
		return true
	})
	if id == nil && method && end == jsontext.PrefixClosed {
		return nil, false
	}
	if id != nil && !jsontext.Valid(id) {
		id = nil
	}
	msg := fmt.Sprintf("not sent: the message is longer than --max-frame-bytes (%d), so hoist-mcp cannot inspect it, and in active mode it forwards nothing it has not inspected", limit)
	return mcpmsg.AppendError(nil, bytes.Clone(id), -32600, msg), true
}

// raw copies the rest of the stream from r without looking at it.
func (p *pump) raw(r io.Reader) error {
	buf := make([]byte, readBufSize)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if werr := writeAll(p.dst, buf[:n]); werr != nil {
				return werr
			}
		}
		if err != nil {
			return readEnd(err)
		}
	}
}

func writeAll(w io.Writer, b []byte) error {
	if _, err := w.Write(b); err != nil {
		return errWrite{err}
	}
	return nil
}

// clone copies a line for the recorder into a buffer it will recycle.
func clone(b []byte) []byte {
	c := mcplog.Borrow(len(b))
	copy(c, b)
	return c
}
