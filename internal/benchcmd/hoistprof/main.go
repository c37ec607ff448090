// Command hoistprof is hoist-mcp with a CPU profile: it runs the same
// command line as cmd/hoist-mcp and writes a pprof CPU profile of the whole
// process to $HOIST_CPUPROFILE (a %d in it becomes the pid). Use it as
// proxybench's -hoist to see where the proxy spends its time out of process:
//
//	go build -o /tmp/hoistprof ./internal/benchcmd/hoistprof
//	HOIST_CPUPROFILE=/tmp/hoist-%d.pprof go run ./internal/benchcmd/proxybench -hoist /tmp/hoistprof
//	go tool pprof -top /tmp/hoistprof /tmp/hoist-PID.pprof
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := mcpcli.Main(ctx, os.Args[1:], iostreams.System())
	stop()
	pprof.StopCPUProfile()
	os.Exit(code)
}
