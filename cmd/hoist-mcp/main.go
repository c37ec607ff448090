package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/hoist-mcp/hoist/internal/iostreams"
	"github.com/hoist-mcp/hoist/internal/mcpcli"
)

func main() {
	// A host that goes away must not kill the proxy with SIGPIPE before the
	// server is stopped and the log is closed.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := mcpcli.Main(ctx, os.Args[1:], iostreams.System())
	stop()
	os.Exit(code)
}
