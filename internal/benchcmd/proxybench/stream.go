package main

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// messageLine returns one JSON-RPC response line of exactly size bytes,
// newline included: a tools/call result whose text is printable filler from
// a fixed seed, as a large tool answer looks on the wire.
func messageLine(size int) []byte {
	head := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"`
	tail := `"}]}}` + "\n"
	n := size - len(head) - len(tail)
	if n < 0 {
		panic("messageLine: size too small")
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:-"
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, 0, size)
	b = append(b, head...)
	for range n {
		b = append(b, alphabet[r.IntN(len(alphabet))])
	}
	return append(b, tail...)
}

// echoResult is one run of echo.
type echoResult struct {
	elapsed time.Duration // from start until every byte is back and the process exited
	back    time.Duration // from start until every byte is back
	hwm     int64         // the process's peak RSS (VmHWM) once every byte was back, in bytes
	cpu     time.Duration // user and system CPU of the process and its reaped children
}

// echo starts argv, an echo server (cat, or a proxy in front of cat), and
// sends it count copies of line while reading them back: all at once from a
// writer goroutine (streamed), or one at a time, each after the previous one
// came back, as a host that waits for each answer does. Once every byte is
// back it reads the process's peak RSS, closes its stdin and waits for it to
// exit: a proxy has closed and synced its log by then, and elapsed counts
// until that moment.
func echo(argv []string, line []byte, count int, oneAtATime bool) (echoResult, error) {
	name := strings.Join(argv, " ")
	cmd := exec.Command(argv[0], argv[1:]...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return echoResult{}, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return echoResult{}, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return echoResult{}, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	t0 := time.Now()
	fail := func(err error) (echoResult, error) {
		cmd.Process.Kill()
		cmd.Wait()
		return echoResult{}, fmt.Errorf("%s: %w\n%s", name, err, stderr.Bytes())
	}
	total := int64(len(line)) * int64(count)
	if oneAtATime {
		back := make([]byte, len(line))
		for i := range count {
			if _, err := in.Write(line); err != nil {
				return fail(fmt.Errorf("writing message %d: %w", i, err))
			}
			if _, err := io.ReadFull(out, back); err != nil {
				return fail(fmt.Errorf("reading message %d: %w", i, err))
			}
		}
	} else {
		wrote := make(chan error, 1)
		go func() {
			var err error
			for range count {
				if _, err = in.Write(line); err != nil {
					break
				}
			}
			wrote <- err
		}()
		got, err := io.CopyBuffer(io.Discard, io.LimitReader(out, total), make([]byte, 1<<20))
		if werr := <-wrote; werr != nil {
			return fail(fmt.Errorf("writing: %w", werr))
		}
		if err != nil || got != total {
			return fail(fmt.Errorf("read back %d bytes of %d: %v", got, total, err))
		}
	}
	r := echoResult{back: time.Since(t0), hwm: peakRSS(cmd.Process.Pid)}
	in.Close()
	extra, err := io.Copy(io.Discard, out)
	if err != nil || extra != 0 {
		return fail(fmt.Errorf("after every byte came back: %d more bytes, %v", extra, err))
	}
	if err := cmd.Wait(); err != nil {
		return fail(err)
	}
	r.elapsed = time.Since(t0)
	r.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return r, nil
}

// peakRSS returns the peak resident set of process pid, VmHWM in
// /proc/PID/status, in bytes; 0 if it cannot be read. (rusage maxrss would
// not do: a child forked from this process with CLONE_VM, as os/exec does,
// starts its count at this process's size.)
func peakRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for l := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n << 10
			}
		}
	}
	return 0
}

// mb formats bytes as MB (10^6 bytes).
func mb(b int64) string { return strconv.FormatFloat(float64(b)/1e6, 'f', 1, 64) + " MB" }
