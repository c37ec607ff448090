package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/hoist-mcp/hoist/internal/buildinfo"
	"github.com/hoist-mcp/hoist/internal/demo"
)

const usage = `usage: hoist-mcp-demo

A tiny MCP server on stdio for trying hoist-mcp. Its tools answer with their
arguments and store nothing:

  lookup   annotated read-only (readOnlyHint: true)
  update   annotated as not read-only (readOnlyHint: false)

"fail": true makes either return an error result; "delay_ms": n makes it
wait n ms first (calls run concurrently, so delayed calls overlap).

  echo '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' | hoist-mcp --record /tmp/hoist-logs -- hoist-mcp-demo
`

func main() {
	for _, a := range os.Args[1:] {
		switch a {
		case "-h", "-help", "--help":
			fmt.Fprint(os.Stdout, usage)
			os.Exit(0)
		case "--version":
			fmt.Printf("hoist-mcp-demo %s\n", buildinfo.Version())
			os.Exit(0)
		default:
			fmt.Fprintf(os.Stderr, "hoist-mcp-demo: unknown argument %q\n%s", a, usage)
			os.Exit(2)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s := &demo.Server{Version: buildinfo.Version()}
	if err := s.Serve(ctx, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "hoist-mcp-demo: %v\n", err)
		os.Exit(1)
	}
}
