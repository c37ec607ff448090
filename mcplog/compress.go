package mcplog

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// zstdMagic starts every zstd frame (RFC 8878, section 3.1.1).
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// decompress returns the log's content as read from r, and the closer that
// releases any decoder. A .zst name, or content that starts with zstd's
// magic number, is decompressed as it is read, so archived logs
// (.jsonl.zst) read like plain ones.
func decompress(r io.Reader, path string) (io.Reader, io.Closer, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(len(zstdMagic))
	if !bytes.Equal(head, zstdMagic) && !strings.HasSuffix(path, ".zst") {
		return br, nopCloser{}, nil
	}
	// One goroutine and a bounded window: logs are read one at a time
	// per reader, and a hostile frame must not claim all memory.
	zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(64<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("reading compressed session log %s: %w", path, err)
	}
	return &zstdErrors{zr, path}, zstdCloser{zr}, nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

type zstdCloser struct{ zr *zstd.Decoder }

func (c zstdCloser) Close() error {
	c.zr.Close()
	return nil
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

// closers closes the decoder, then the file.
type closers struct {
	dec io.Closer
	f   *os.File
}

func (c closers) Close() error {
	c.dec.Close()
	return c.f.Close()
}
