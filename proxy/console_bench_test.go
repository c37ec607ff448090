package proxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"testing"
)

// BenchmarkConsolePassive measures what --console costs the relay while no
// console is attached (issue 15, point 3: the passive path gains nothing
// when no console is configured, and a configured one that is not there
// holds nothing). Each op is one tools/call line from the host through
// the proxy to cat, standing for the server, and back; the same run
// measures the proxy without --console first, and the second sub-benchmark
// reports its ns/op over the first's as "ratio":
//
//	go test -run - -bench ConsolePassive -benchtime 20000x ./proxy
func BenchmarkConsolePassive(b *testing.B) {
	// An address nobody listens on: the proxy keeps trying to attach.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	nobody := ln.Addr().String()
	ln.Close()
	line := []byte(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"get_order_details","arguments":{"order_id":"#W1a"}}}` + "\n")
	var base float64
	for _, tc := range []struct {
		name    string
		console *ConsoleOptions
	}{{"without --console", nil}, {"with --console, not attached", &ConsoleOptions{Addr: nobody}}} {
		b.Run(tc.name, func(b *testing.B) {
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			done := make(chan int, 1)
			go func() {
				done <- RunStdio(context.Background(), Options{Command: []string{"cat"}, Console: tc.console}, Streams{In: inR, Out: outW, Err: io.Discard})
				outW.Close()
			}()
			out := bufio.NewReader(outR)
			b.ResetTimer()
			for range b.N {
				if _, err := inW.Write(line); err != nil {
					b.Fatal(err)
				}
				got, err := out.ReadSlice('\n')
				if err != nil || len(got) != len(line) {
					b.Fatalf("read back %q, %v", got, err)
				}
			}
			b.StopTimer()
			inW.Close()
			if code := <-done; code != 0 {
				b.Fatalf("the proxy exited %d", code)
			}
			per := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if tc.console == nil {
				base = per
			} else if base > 0 {
				b.ReportMetric(per/base, "ratio")
			}
		})
	}
}
