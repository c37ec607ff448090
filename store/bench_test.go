package store

import (
	"context"
	"os"
	"testing"

	"github.com/hoist-mcp/hoist/episode"
)

// BenchmarkEpisodes reads every episode of the store in $HOIST_BENCH_STORE
// (a store hoist ingest wrote); it is skipped without one. For profiles:
// go test -bench Episodes -cpuprofile cpu.out ./store
func BenchmarkEpisodes(b *testing.B) {
	path := os.Getenv("HOIST_BENCH_STORE")
	if path == "" {
		b.Skip("HOIST_BENCH_STORE is not set")
	}
	ctx := context.Background()
	db, err := OpenReadOnly(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	n := 0
	for i := 0; i < b.N; i++ {
		if err := db.Episodes(ctx, episode.Filter{}, func(*episode.Episode) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "episodes/s")
}
