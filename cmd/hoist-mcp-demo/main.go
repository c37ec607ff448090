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

const usage = `usage: hoist-mcp-demo [--world echo|retail] [--http ADDR]

A tiny MCP server for trying hoist-mcp. The echo world (the default) has
two tools that answer with their arguments and store nothing:

  lookup   annotated read-only (readOnlyHint: true)
  update   annotated as not read-only (readOnlyHint: false)

"fail": true makes either return an error result; "delay_ms": n makes it
wait n ms first (calls run concurrently, so delayed calls overlap).

--world retail serves a tiny shop instead, with four of τ²-bench retail's
tools and canned data: cN@example.com is user_N (N from 1 to 20), whose
orders #WNa and #WNb are pending.

  find_user_id_by_email  {"email"}               read-only
  get_user_details       {"user_id"}             read-only
  get_order_details      {"order_id"}            read-only
  cancel_pending_order   {"order_id", "reason"}  not read-only; the reason
                         is "no longer needed" or "ordered by mistake"

Answers are τ²-bench's: JSON text, errors as error results ("Error: User
not found"). A cancelled order stays cancelled until the process exits.

It speaks stdio by default. --http ADDR serves Streamable HTTP at
http://ADDR/mcp instead (ADDR 127.0.0.1:0 picks a free port; the URL is
printed on stdout), insisting on the session id and protocol version.

  echo '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' | hoist-mcp --record /tmp/hoist-logs -- hoist-mcp-demo
  hoist-mcp-demo --http 127.0.0.1:8932 &
  hoist-mcp --upstream http://127.0.0.1:8932/mcp
  hoist-procedure --param email=c7@example.com testdata/procedures/retail/cancel-order.jsonl -- hoist-mcp-demo --world retail
`

func main() {
	httpAddr, world := "", "echo"
	args := os.Args[1:]
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "-h", "-help", "--help":
			fmt.Fprint(os.Stdout, usage)
			os.Exit(0)
		case "--version":
			fmt.Printf("hoist-mcp-demo %s\n", buildinfo.Version())
			os.Exit(0)
		case "--http":
			if i+1 >= len(args) {
				fmt.Fprintf(os.Stderr, "hoist-mcp-demo: --http needs an address, such as 127.0.0.1:8932\n")
				os.Exit(2)
			}
			i++
			httpAddr = args[i]
		case "--world":
			if i+1 >= len(args) || (args[i+1] != "echo" && args[i+1] != "retail") {
				fmt.Fprintf(os.Stderr, "hoist-mcp-demo: --world needs echo or retail\n")
				os.Exit(2)
			}
			i++
			world = args[i]
		default:
			fmt.Fprintf(os.Stderr, "hoist-mcp-demo: unknown argument %q\n%s", a, usage)
			os.Exit(2)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s := &demo.Server{Version: buildinfo.Version()}
	if world == "retail" {
		s.World = demo.NewRetail(demo.DefaultRetailUsers)
	}
	if httpAddr != "" {
		err := demo.ListenAndServe(ctx, httpAddr, &demo.HTTP{Server: s}, func(url string) {
			fmt.Println(url)
			fmt.Fprintf(os.Stderr, "hoist-mcp-demo: serving MCP at %s\n", url)
		})
		if err != nil {
			fmt.Fprintf(os.Stderr, "hoist-mcp-demo: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if err := s.Serve(ctx, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "hoist-mcp-demo: %v\n", err)
		os.Exit(1)
	}
}
