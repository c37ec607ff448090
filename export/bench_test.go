package export

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hoist-mcp/hoist/store"
)

// benchStore opens the store in $HOIST_BENCH_STORE (the bench.db
// internal/benchcmd/ingestbench -dir leaves); the benchmark is skipped
// without one.
func benchStore(b *testing.B) *store.DB {
	path := os.Getenv("HOIST_BENCH_STORE")
	if path == "" {
		b.Skip("HOIST_BENCH_STORE is not set")
	}
	db, err := store.OpenReadOnly(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// exportOnce exports db as Parquet and returns the rows written.
func exportOnce(b *testing.B, db *store.DB) int64 {
	res, err := Export(context.Background(), db, Options{Format: Parquet, Out: filepath.Join(b.TempDir(), "out")})
	if err != nil {
		b.Fatal(err)
	}
	var rows int64
	for _, n := range res.Rows {
		rows += n
	}
	return rows
}

// BenchmarkParquet exports the store in $HOIST_BENCH_STORE as Parquet. For
// profiles:
//
//	go test -run '^$' -bench 'Parquet$' -benchmem -cpuprofile cpu.out -memprofile mem.out ./export
func BenchmarkParquet(b *testing.B) {
	db := benchStore(b)
	var rows int64
	for b.Loop() {
		rows = exportOnce(b, db)
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkParquetAllocators exports the store with the pooling allocator
// and with Go's (what the export used before it) in turns, b.N times each,
// and reports each one's rows per second of wall time and of the process's
// CPU time (the GC's included), and the ratios: before and after in one
// process, with whatever else loads the machine weighing on both.
func BenchmarkParquetAllocators(b *testing.B) {
	db := benchStore(b)
	defer func(f func() memory.Allocator) { newAllocator = f }(newAllocator)
	allocators := [2]func() memory.Allocator{
		func() memory.Allocator { return memory.NewGoAllocator() },
		func() memory.Allocator { return newPoolAllocator() },
	}
	var wall, cpu [2]time.Duration
	var rows int64
	for i := range b.N {
		for k := range allocators {
			k = (k + i) % 2
			newAllocator = allocators[k]
			w0, c0 := time.Now(), processCPU()
			rows = exportOnce(b, db)
			wall[k] += time.Since(w0)
			cpu[k] += processCPU() - c0
		}
	}
	per := func(d time.Duration) float64 { return float64(rows) * float64(b.N) / d.Seconds() }
	b.ReportMetric(per(wall[0]), "go-rows/s")
	b.ReportMetric(per(wall[1]), "pool-rows/s")
	b.ReportMetric(per(cpu[0]), "go-rows/CPU-s")
	b.ReportMetric(per(cpu[1]), "pool-rows/CPU-s")
	b.ReportMetric(wall[0].Seconds()/wall[1].Seconds(), "wall-speedup")
	b.ReportMetric(cpu[0].Seconds()/cpu[1].Seconds(), "CPU-speedup")
}

// processCPU is the CPU time this process has used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
