// Command redactbench is the redact benchmark of issue 6, point 7: it runs
// redact.Dir (what hoist redact runs) over a directory of session logs,
// the τ²-bench logs beside the checkout by default, several times, and
// reports the throughput in MB/s of input read, the values replaced per
// second and the peak RSS.
//
// Each run writes a fresh copy to a temporary directory and uses a fresh
// key, so nothing is cached between runs; within a run, a value met again
// is mapped from the run's cache, as in a real copy.
//
//	go run ./internal/benchcmd/redactbench -sessions ../shared/data/tau2/logs -runs 3
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/hoist-mcp/hoist/redact"
)

func main() {
	sessions := flag.String("sessions", "../shared/data/tau2/logs", "the session logs to redact")
	runs := flag.Int("runs", 3, "runs; the median is reported")
	flag.Parse()
	if err := run(*sessions, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "redactbench:", err)
		os.Exit(1)
	}
}

func run(sessions string, runs int) error {
	tmp, err := os.MkdirTemp("", "hoist-redactbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var secs []float64
	var m *redact.Manifest
	for i := range max(runs, 1) {
		out := filepath.Join(tmp, fmt.Sprintf("copy%d", i))
		start := time.Now()
		m, err = redact.Dir(context.Background(), sessions, out, redact.Options{})
		if err != nil {
			return err
		}
		secs = append(secs, time.Since(start).Seconds())
		os.RemoveAll(out)
	}
	sort.Float64s(secs)
	med := secs[len(secs)/2]
	values := 0
	for _, n := range m.Replaced {
		values += n
	}
	files := 0
	for _, n := range m.Files {
		files += n
	}
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	mb := float64(m.Bytes) / 1e6
	fmt.Printf("redact %s: %d files, %.1f MB, %d values replaced\n", sessions, files, mb, values)
	for i := range secs {
		secs[i] = float64(int(secs[i]*1000)) / 1000
	}
	cpu := func(tv syscall.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }
	user, sys := cpu(ru.Utime)/float64(len(secs)), cpu(ru.Stime)/float64(len(secs))
	fmt.Printf("median of %d runs: %.2f s, %.1f MB/s, %.0f values/s (runs %v s); peak RSS %.0f MB\n",
		len(secs), med, mb/med, float64(values)/med, secs, float64(ru.Maxrss)/1024)
	fmt.Printf("CPU per run: %.2f s user (%.1f MB per CPU-second), %.2f s system (creating, syncing and removing files)\n",
		user, mb/user, sys)
	return nil
}
