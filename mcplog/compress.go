package mcplog

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// zstdMagic starts every zstd frame (RFC 8878, section 3.1.1).
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// decompress returns the log's content as read from r, and the closer that
// releases any decoder. A .zst name, or content that starts with zstd's
// magic number, is decompressed as it is read, so archived logs
// (.jsonl.zst) read like plain ones.
//
// The buffer it reads through is borrowed from a pool and given back by
// the closer: an ingest opens logs by the thousand, many of them shorter
// than the buffer, and a new 64 KiB for each was a cost per file.
func decompress(r io.Reader, path string) (io.Reader, io.Closer, error) {
	br := borrowReader(r)
	head, _ := br.Peek(len(zstdMagic))
	if !bytes.Equal(head, zstdMagic) && !strings.HasSuffix(path, ".zst") {
		return br, &bufCloser{br: br}, nil
	}
	// One goroutine and a bounded window: logs are read one at a time
	// per reader, and a hostile frame must not claim all memory.
	zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(64<<20))
	if err != nil {
		giveReader(br)
		return nil, nil, fmt.Errorf("reading compressed session log %s: %w", path, err)
	}
	return &zstdErrors{zr, path}, zstdCloser{zr, &bufCloser{br: br}}, nil
}

// readBufSize is the size of a log reader's buffer: lines longer than it
// are read in pieces, so it bounds nothing but the reads' size.
const readBufSize = 64 << 10

var bufReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufSize) }}

// borrowReader returns a pooled buffered reader of r.
func borrowReader(r io.Reader) *bufio.Reader {
	br := bufReaders.Get().(*bufio.Reader)
	br.Reset(r)
	return br
}

// giveReader returns br to the pool. Nothing may read through it after:
// the lines a log reader returns are copies, never slices of its buffer.
func giveReader(br *bufio.Reader) {
	br.Reset(nil)
	bufReaders.Put(br)
}

// bufCloser gives a borrowed reader back, once.
type bufCloser struct{ br *bufio.Reader }

func (c *bufCloser) Close() error {
	if c.br != nil {
		giveReader(c.br)
		c.br = nil
	}
	return nil
}

type zstdCloser struct {
	zr  *zstd.Decoder
	buf io.Closer
}

func (c zstdCloser) Close() error {
	c.zr.Close()
	return c.buf.Close()
}

// zstdErrors names the file in a decompression error.
type zstdErrors struct {
	zr   *zstd.Decoder
	path string
}

func (z *zstdErrors) Read(p []byte) (int, error) {
	n, err := z.zr.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("decompressing %s: %w", z.path, err)
	}
	return n, err
}

// closers closes the decoder, then gives back the buffer and closes the
// file, those of them that are set.
type closers struct {
	dec io.Closer
	buf io.Closer
	f   *os.File
}

func (c closers) Close() error {
	var err error
	for _, x := range []io.Closer{c.dec, c.buf} {
		if x != nil {
			x.Close()
		}
	}
	if c.f != nil {
		err = c.f.Close()
	}
	return err
}
