// Package iostreams carries a program's standard streams, so that commands
// never write to os.Stdout or os.Stderr directly and tests can drive them
// with buffers.
package iostreams

import (
	"io"
	"os"
)

// Streams are a command's input, output and diagnostics.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// System returns the process's own streams.
func System() Streams {
	return Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}
}

// IsTerminal reports whether w is a character device such as a terminal,
// where tables and progress bars belong; pipes and files get plain output.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
