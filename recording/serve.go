package recording

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/hoist-mcp/hoist/jsonrpc"
)

// Serve answers the requests read from in on out, one line each, in the
// order they came, until in ends or ctx is done. note is told what Answer
// notes (a loose match, a request with no match); it may be nil.
func (r *Replayer) Serve(ctx context.Context, in io.Reader, out io.Writer, note func(string)) error {
	br := bufio.NewReaderSize(in, 64<<10)
	for ctx.Err() == nil {
		line, err := br.ReadBytes('\n')
		if t := jsonrpc.TrimLine(line); len(bytes.TrimSpace(t)) > 0 {
			a, n := r.Answer(t)
			if n != "" && note != nil {
				note(n)
			}
			if a != nil {
				if _, werr := out.Write(append(a, '\n')); werr != nil {
					return fmt.Errorf("writing an answer: %w", werr)
				}
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading requests: %w", err)
		}
	}
	return nil
}
