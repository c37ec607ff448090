package episode

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hoist-mcp/hoist/mcplog"
)

func TestHostSessions(t *testing.T) {
	// mk makes a log of host session h that starts at start and reads its
	// last line at end (unix ms).
	mk := func(name, h string, start, end int64) *mcplog.Log {
		return &mcplog.Log{
			Header:  mcplog.Header{Log: 2, Session: name, HostSession: h, StartedUnixMS: start},
			Entries: []mcplog.Entry{{TMS: 0}, {TMS: end - start}},
		}
	}
	logs := []*mcplog.Log{
		mk("docs", "h1", 1005, 5000),
		mk("tickets", "h1", 1000, 3000),
		mk("later", "h1", 9000, 9500), // the same host, another time
		mk("chained", "h1", 4900, 6000),
		mk("other-host", "h2", 1500, 2000),
		mk("no-host", "", 1200, 1300),
		mk("touching", "h2", 2000, 2100), // starts as the other ends
	}
	var got [][]string
	for _, g := range HostSessions(logs) {
		var names []string
		for _, l := range g {
			names = append(names, l.Header.Session)
		}
		got = append(got, names)
	}
	want := [][]string{
		{"tickets", "docs", "chained"},
		{"no-host"},
		{"other-host", "touching"},
		{"later"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	start, end := LogSpan(logs[0])
	if fmt.Sprint(start.UnixMilli(), end.UnixMilli()) != "1005 5000" {
		t.Errorf("LogSpan = %v, %v", start, end)
	}
}
