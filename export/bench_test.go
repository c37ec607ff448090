package export

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hoist-mcp/hoist/store"
)

// BenchmarkParquet exports the store in $HOIST_BENCH_STORE (the bench.db
// internal/benchcmd/ingestbench -dir leaves) as Parquet; it is skipped
// without one. For profiles: go test -bench Parquet -cpuprofile cpu.out ./export
func BenchmarkParquet(b *testing.B) {
	path := os.Getenv("HOIST_BENCH_STORE")
	if path == "" {
		b.Skip("HOIST_BENCH_STORE is not set")
	}
	ctx := context.Background()
	db, err := store.OpenReadOnly(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var rows int64
	for i := 0; i < b.N; i++ {
		res, err := Export(ctx, db, Options{Format: Parquet, Out: filepath.Join(b.TempDir(), "out")})
		if err != nil {
			b.Fatal(err)
		}
		rows = 0
		for _, n := range res.Rows {
			rows += n
		}
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
