package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/hoist-mcp/hoist/proxy"
)

// BenchmarkRunStdio runs the proxy in this process in front of cat and
// streams 1 MiB lines through it, so that go test -cpuprofile and
// -memprofile see the proxy's pump and recorder:
//
//	go test -run - -bench RunStdio -benchtime 64x -cpuprofile cpu.out ./internal/benchcmd/proxybench
//	go tool pprof -top cpu.out
func BenchmarkRunStdio(b *testing.B) {
	for _, record := range []bool{false, true} {
		for _, size := range []int{64 << 10, 1 << 20} {
			b.Run(fmt.Sprintf("record=%v/line=%d", record, size), func(b *testing.B) {
				benchRunStdio(b, record, messageLine(size))
			})
		}
	}
}

func benchRunStdio(b *testing.B, record bool, line []byte) {
	inR, inW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	o := proxy.Options{Command: []string{"cat"}}
	if record {
		o.Record = b.TempDir()
	}
	code := make(chan int, 1)
	go func() {
		code <- proxy.RunStdio(context.Background(), o, proxy.Streams{In: inR, Out: outW, Err: io.Discard})
		outW.Close()
	}()
	b.SetBytes(int64(len(line)))
	b.ResetTimer()
	wrote := make(chan error, 1)
	go func() {
		var err error
		for range b.N {
			if _, err = inW.Write(line); err != nil {
				break
			}
		}
		inW.Close()
		wrote <- err
	}()
	n, err := io.CopyBuffer(io.Discard, onlyReader{outR}, make([]byte, 1<<20))
	if err != nil {
		b.Fatal(err)
	}
	if err := <-wrote; err != nil {
		b.Fatal(err)
	}
	if c := <-code; c != 0 {
		b.Fatalf("proxy exited %d", c)
	}
	b.StopTimer()
	inR.Close()
	outR.Close()
	if want := int64(len(line)) * int64(b.N); n != want {
		b.Fatalf("read back %d bytes, want %d", n, want)
	}
}

// onlyReader hides a reader's WriteTo, so that io.CopyBuffer uses the
// buffer it is given.
type onlyReader struct{ io.Reader }
