package episode

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hoist-mcp/hoist/mcplog"
)

// BenchmarkReadLog reads the sample's session logs and builds their
// episodes, reporting lines and bytes per second: the work ingest does per
// log before the store.
func BenchmarkReadLog(b *testing.B) {
	paths, _ := filepath.Glob(filepath.Join(tau2Dir, "logs", "*", "*", "*[0-9].jsonl"))
	if len(paths) == 0 {
		b.Skip("no sample logs")
	}
	var size int64
	lines := 0
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			b.Fatal(err)
		}
		size += fi.Size()
		log, err := mcplog.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		lines += len(log.Entries) + 1
	}
	b.SetBytes(size)
	b.ResetTimer()
	for b.Loop() {
		for _, p := range paths {
			if _, err := ReadLog(p, Options{NoMeta: true}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}
