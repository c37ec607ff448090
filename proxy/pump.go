package proxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/hoist-mcp/hoist/mcplog"
)

// readBufSize is the size of each stream's read buffer. A line longer than
// this is forwarded in pieces as it arrives, never held back whole.
const readBufSize = 256 << 10

// keepAssembly is the largest line-assembly buffer a pump keeps between lines.
const keepAssembly = 4 << 20

// startPeek is how much of a line's first piece onStart is shown: enough
// for the cheap checks it serves, which read a line's first members
// (jsonrpc.LooksLikeMessage says yes to a prefix it cannot finish), and not
// a large message's whole first piece, which such a check would otherwise
// scan to its end on the forwarding path (issue 13, point 4).
const startPeek = 4 << 10

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
}

// errWrite marks an error of the destination, so the caller can tell a
// vanished reader from the end of the source.
type errWrite struct{ err error }

func (e errWrite) Error() string { return "forwarding: " + e.err.Error() }
func (e errWrite) Unwrap() error { return e.err }

// run pumps until the source ends (nil) or a read or write fails.
func (p *pump) run() error {
	br := bufio.NewReaderSize(p.src, readBufSize)
	var acc []byte   // the line so far, when keep
	started := false // a piece of the current line has been seen
	total := 0       // bytes of the current line
	if p.intercept != nil {
		return p.runWhole(br)
	}
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if !started {
				started = true
				if p.onStart != nil {
					p.onStart(chunk[:min(len(chunk), startPeek)])
				}
			}
			total += len(chunk)
			complete := err == nil
			if p.keep {
				if total > p.maxFrame {
					// Too big to assemble: forward what we have and the rest
					// of the stream as it comes, and stop looking at it.
					if p.onRaw != nil {
						p.onRaw(p.maxFrame)
					}
					if werr := writeAll(p.dst, chunk); werr != nil {
						return werr
					}
					return p.raw(br)
				}
				switch {
				case len(acc) == 0 && complete:
					p.onLine(clone(chunk))
				default:
					// A line in pieces is assembled in a buffer kept from
					// line to line, then handed over in one exact copy.
					acc = append(acc, chunk...)
					if complete || err == io.EOF {
						p.onLine(clone(acc))
						acc = acc[:0]
						if cap(acc) > keepAssembly {
							acc = nil
						}
					}
				}
			} else if total > p.maxFrame && p.onRaw != nil {
				p.onRaw(p.maxFrame)
				if werr := writeAll(p.dst, chunk); werr != nil {
					return werr
				}
				return p.raw(br)
			}
			if werr := writeAll(p.dst, chunk); werr != nil {
				return werr
			}
			if complete {
				started, total = false, 0
			}
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF, errors.Is(err, os.ErrDeadlineExceeded):
			// EOF: a last line without newline is still a line. Deadline:
			// the owner stopped waiting for this stream.
			if p.keep && len(acc) > 0 {
				p.onLine(clone(acc))
			}
			return nil
		default:
			return fmt.Errorf("reading: %w", err)
		}
	}
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
			if !p.intercept(line) {
				if werr := writeAll(p.dst, line); werr != nil {
					return werr
				}
			}
		}
		switch {
		case err == nil:
		case err == io.EOF, errors.Is(err, os.ErrDeadlineExceeded):
			return nil
		default:
			return fmt.Errorf("reading: %w", err)
		}
	}
}

// raw copies the rest of the stream without looking at it.
func (p *pump) raw(br *bufio.Reader) error {
	buf := make([]byte, readBufSize)
	for {
		n, err := br.Read(buf)
		if n > 0 {
			if werr := writeAll(p.dst, buf[:n]); werr != nil {
				return werr
			}
		}
		if err == io.EOF || errors.Is(err, os.ErrDeadlineExceeded) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading: %w", err)
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
