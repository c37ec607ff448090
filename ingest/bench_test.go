package ingest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkDir ingests the corpus in $HOIST_BENCH_CORPUS (written by
// internal/benchingest -dir) into a new store each time; it is skipped
// without one. For profiles: go test -bench Dir -cpuprofile cpu.out ./ingest
func BenchmarkDir(b *testing.B) {
	corpus := os.Getenv("HOIST_BENCH_CORPUS")
	if corpus == "" {
		b.Skip("HOIST_BENCH_CORPUS is not set")
	}
	for i := 0; i < b.N; i++ {
		db := openStore(b, filepath.Join(b.TempDir(), "bench.db"))
		st, err := Dir(context.Background(), db, corpus, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(st.Bytes)
		b.ReportMetric(float64(st.Lines)/b.Elapsed().Seconds()*float64(i+1)/float64(b.N), "lines/s")
	}
}
