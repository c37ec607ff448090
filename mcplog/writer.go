package mcplog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/hoist-mcp/hoist/jsontext"
)

// MaxQueued is how many bytes of lines may wait for the disk before Record
// drops lines instead of queueing them.
const MaxQueued = 256 << 20

// Writer appends wire lines to a session log from a goroutine of its own, so
// that whoever records a line never waits for the disk (manual, "Log
// format": "A writer thread writes each line out as soon as it gets it, off
// the forwarding path"). Lines reach the file whole and in the order they
// were recorded, so a process killed at any moment leaves a log whose every
// complete line parses.
//
// Record may be called from several goroutines at once. Close must be called
// once recording is over; it waits for the queue to drain.
type Writer struct {
	path  string
	f     *os.File
	start time.Time

	mu      sync.Mutex
	queue   []entry
	queued  int   // bytes of the lines in queue
	dropped int64 // lines not recorded because the queue was full
	lastMS  int64
	closed  bool
	parked  bool  // the writer goroutine waits for wake with nothing to do
	err     error // first write error, reported once by Close

	wake chan struct{} // buffered(1): work for a parked writer, or close
	done chan struct{} // closed when the writer goroutine has returned
}

type entry struct {
	tMS  int64
	from string
	line []byte // without terminator; owned by the Writer
}

// Create creates the log at path (it must not exist; mode 0600), writes the
// header synchronously and starts the writer goroutine. t_ms of each line is
// counted from start.
func Create(path string, h Header, start time.Time) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating session log: %w", err)
	}
	// Encoded without HTML escaping, so <redacted> reads as written.
	var hb bytes.Buffer
	enc := json.NewEncoder(&hb)
	enc.SetEscapeHTML(false)
	err = enc.Encode(h)
	if err == nil {
		_, err = f.Write(hb.Bytes())
	}
	if err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("writing session log header: %w", err)
	}
	w := &Writer{
		path:  path,
		f:     f,
		start: start,
		wake:  make(chan struct{}, 1),
		done:  make(chan struct{}),
	}
	go w.loop()
	return w, nil
}

// CreateJSONL creates a JSON-lines file at path (it must not exist; mode
// 0600) with no header, written by the same kind of goroutine, for logs of
// whole JSON objects such as the flow log: see Append.
func CreateJSONL(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	return newJSONL(path, f), nil
}

// AppendJSONL opens the JSON-lines file at path to append to it, creating
// it (mode 0600) when missing: a log several sessions share. Each Append
// reaches the file as whole lines, in one write of the batch they are in.
func AppendJSONL(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	return newJSONL(path, f), nil
}

func newJSONL(path string, f *os.File) *Writer {
	w := &Writer{
		path:  path,
		f:     f,
		start: time.Now(),
		wake:  make(chan struct{}, 1),
		done:  make(chan struct{}),
	}
	go w.loop()
	return w
}

// Append queues one line that is already a whole JSON object, written as
// it is; the Writer takes ownership of line.
func (w *Writer) Append(line []byte) { w.Record("", line) }

// Path returns the log's file name.
func (w *Writer) Path() string { return w.path }

// Record queues one wire line (without its terminator) and returns at once.
// The Writer takes ownership of line: the caller must not use it after
// (the Writer may recycle it for Borrow).
// Whether the line is stored as "message" or "raw" is decided by the writer
// goroutine, off the caller's path.
func (w *Writer) Record(from string, line []byte) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	// Times never decrease down the log: the time is taken under the lock
	// that orders the queue.
	ms := time.Since(w.start).Milliseconds()
	if ms < w.lastMS {
		ms = w.lastMS
	}
	w.lastMS = ms
	if w.queued+len(line) > MaxQueued && len(w.queue) > 0 {
		// The disk has fallen far behind: lose log lines rather than make
		// the host wait or the proxy's memory grow without bound.
		w.dropped++
		w.mu.Unlock()
		return
	}
	w.queued += len(line)
	w.queue = append(w.queue, entry{tMS: ms, from: from, line: line})
	// A busy writer comes back for the queue by itself; waking it for
	// every line would cost the forwarding path a wake-up per line.
	wake := w.parked || w.queued >= wakeBytes
	w.parked = false
	w.mu.Unlock()
	if wake {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// While lines keep coming, the writer writes what has queued every
// flushInterval, or as soon as wakeBytes have queued.
const (
	flushInterval = 2 * time.Millisecond
	wakeBytes     = 1 << 20
)

// Close stops recording, writes what is queued and closes the file. It does
// not fsync: once the proxy exits the log is whole for every reader, and
// making the host's exit wait for the disk buys nothing a session needs.
// It is safe to call more than once; later calls return nil.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	<-w.done
	err := w.err
	if err == nil && w.dropped > 0 {
		err = fmt.Errorf("%d line(s) were not recorded: the disk fell more than %d MiB behind", w.dropped, MaxQueued>>20)
	}
	if cerr := w.f.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing session log %s: %w", w.path, err)
	}
	return nil
}

func (w *Writer) loop() {
	// The writer's work, validating each line and the file's writes, runs
	// on a thread of its own and never on one that forwards: the kernel's
	// scheduler then charges that CPU time to this thread alone, and on a
	// busy machine it still wakes the forwarding threads, which use little,
	// as promptly as a cat relay's (issue 13, point 4; in two proxybench
	// runs, 1.04–1.27× the calls per second of the same build without). The
	// thread ends with the goroutine, which never unlocks it.
	runtime.LockOSThread()
	defer close(w.done)
	bw := bufio.NewWriterSize(w.f, 256<<10)
	var batch []entry
	var buf []byte
	pause := time.NewTimer(flushInterval)
	pause.Stop()
	for {
		w.mu.Lock()
		batch, w.queue = w.queue, batch[:0]
		w.queued = 0
		closed := w.closed
		if len(batch) == 0 && !closed {
			w.parked = true
			w.mu.Unlock()
			<-w.wake
			continue
		}
		w.mu.Unlock()
		for i := range batch {
			if w.err == nil {
				buf, w.err = writeLine(bw, buf, &batch[i])
			}
			recycle(batch[i].line)
			batch[i] = entry{} // let the line go
		}
		if w.err == nil {
			w.err = bw.Flush()
		}
		if cap(buf) > 1<<20 {
			buf = nil // don't keep a huge line's buffer alive
		}
		if closed {
			return
		}
		// Let lines gather for a moment, unless a backlog or Close calls.
		pause.Reset(flushInterval)
		select {
		case <-pause.C:
		case <-w.wake:
			pause.Stop()
		}
	}
}

// writeLine writes e's log line to bw, using buf (returned for reuse) for
// what it builds. A message goes to bw as it is, between the line's head
// and "}\n": a large tool result is not copied once more on its way to the
// file.
func writeLine(bw *bufio.Writer, buf []byte, e *entry) ([]byte, error) {
	if e.from == "" { // Append: a whole line of its own
		if _, err := bw.Write(e.line); err != nil {
			return buf, err
		}
		return buf, bw.WriteByte('\n')
	}
	if !jsontext.Valid(e.line) {
		buf = AppendLine(buf[:0], e.tMS, e.from, e.line, false)
		_, err := bw.Write(buf)
		return buf, err
	}
	buf = append(appendHead(buf[:0], e.tMS, e.from), `,"message":`...)
	if _, err := bw.Write(buf); err != nil {
		return buf, err
	}
	if _, err := bw.Write(e.line); err != nil {
		return buf, err
	}
	_, err := bw.WriteString("}\n")
	return buf, err
}

// appendHead appends the members every log line starts with.
func appendHead(dst []byte, tMS int64, from string) []byte {
	dst = append(dst, `{"t_ms":`...)
	dst = strconv.AppendInt(dst, tMS, 10)
	dst = append(dst, `,"from":`...)
	return jsontext.AppendString(dst, from, jsontext.Plain)
}

// AppendLine appends one log line for a wire line (without terminator) to
// dst: {"t_ms":…,"from":…,"message":<line>} when isJSON says line is one
// valid JSON value (see jsontext.Valid), else {"t_ms":…,"from":…,"raw":"<line
// as text>"}. The log line ends in "\n".
func AppendLine(dst []byte, tMS int64, from string, line []byte, isJSON bool) []byte {
	dst = appendHead(dst, tMS, from)
	if isJSON {
		dst = append(dst, `,"message":`...)
		dst = append(dst, line...)
	} else {
		dst = append(dst, `,"raw":`...)
		dst = jsontext.AppendString(dst, string(line), jsontext.Plain)
	}
	return append(dst, "}\n"...)
}
