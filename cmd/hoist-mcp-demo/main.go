package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/hoist-mcp/hoist/internal/democli"
	"github.com/hoist-mcp/hoist/internal/iostreams"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := democli.Main(ctx, os.Args[1:], iostreams.System())
	stop()
	os.Exit(code)
}
