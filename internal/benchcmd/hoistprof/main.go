// Command hoistprof is hoist-mcp with profiles: it runs the same command
// line as cmd/hoist-mcp and writes a pprof CPU profile of the whole process
// to $HOIST_CPUPROFILE, and its allocations (by bytes and by count, a
// sample every 64 KiB) to $HOIST_MEMPROFILE when it ends (a %d in either
// becomes the pid). Use it as proxybench's or httpbench's -hoist to see where the
// proxy spends its time and what it allocates out of process:
//
//	go build -o /tmp/hoistprof ./internal/benchcmd/hoistprof
//	HOIST_CPUPROFILE=/tmp/hoist-%d.pprof go run ./internal/benchcmd/proxybench -hoist /tmp/hoistprof
//	go tool pprof -top /tmp/hoistprof /tmp/hoist-PID.pprof
//	go tool pprof -sample_index=alloc_space -top /tmp/hoistprof /tmp/hoist-PID.mem
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/internal/mcpcli"
)

func main() {
	signal.Ignore(syscall.SIGPIPE)
	if path := os.Getenv("HOIST_CPUPROFILE"); path != "" {
		if strings.Contains(path, "%d") {
			path = fmt.Sprintf(path, os.Getpid())
		}
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "hoistprof: %v\n", err)
			os.Exit(125)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(os.Stderr, "hoistprof: %v\n", err)
			os.Exit(125)
		}
	}
	memPath := os.Getenv("HOIST_MEMPROFILE")
	if memPath != "" {
		runtime.MemProfileRate = 64 << 10
		if strings.Contains(memPath, "%d") {
			memPath = fmt.Sprintf(memPath, os.Getpid())
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := mcpcli.Main(ctx, os.Args[1:], iostreams.System())
	stop()
	pprof.StopCPUProfile()
	if memPath != "" {
		if f, err := os.Create(memPath); err == nil {
			pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	}
	os.Exit(code)
}
