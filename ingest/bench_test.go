package ingest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hoist-mcp/hoist/store"
)

// BenchmarkDir ingests the corpus in $HOIST_BENCH_CORPUS (written by
// internal/benchcmd/ingestbench -dir) into a new store each time; it is skipped
// without one. For profiles: go test -bench Dir -cpuprofile cpu.out ./ingest
// The store is built as hoist ingest builds a new one (store.Build, then
// Publish).
func BenchmarkDir(b *testing.B) {
	corpus := os.Getenv("HOIST_BENCH_CORPUS")
	if corpus == "" {
		b.Skip("HOIST_BENCH_CORPUS is not set")
	}
	for i := 0; i < b.N; i++ {
		db, err := store.Build(context.Background(), filepath.Join(b.TempDir(), "bench.db"))
		if err != nil {
			b.Fatal(err)
		}
		st, err := Dir(context.Background(), db, corpus, Options{})
		if err == nil {
			err = db.Publish(context.Background())
		}
		db.Close()
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(st.Bytes)
		b.ReportMetric(float64(st.Lines)/b.Elapsed().Seconds()*float64(i+1)/float64(b.N), "lines/s")
	}
}
