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

// decompress returns the log's content as read from f, and the closer that
// releases f and any decoder. A .zst name, or content that starts with
// zstd's magic number, is decompressed as it is read, so archived logs
// (.jsonl.zst) read like plain ones.
func decompress(f *os.File, path string) (io.Reader, io.Closer, error) {
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(len(zstdMagic))
	if !bytes.Equal(head, zstdMagic) && !strings.HasSuffix(path, ".zst") {
		return br, f, nil
	}
	// One goroutine and a bounded window: logs are read one at a time
	// per reader, and a hostile frame must not claim all memory.
	zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(64<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("reading compressed session log %s: %w", path, err)
	}
	return &zstdErrors{zr, path}, closers{zr, f}, nil
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
	zr *zstd.Decoder
	f  *os.File
}

func (c closers) Close() error {
	c.zr.Close()
	return c.f.Close()
}
