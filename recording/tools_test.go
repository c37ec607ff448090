package recording

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestToolHistories: a listing paged with a cursor is joined; a listing
// after notifications/tools/list_changed is compared with the one before it
// in the same session; sessions count in the order they started, whatever
// the order of the files.
func TestToolHistories(t *testing.T) {
	dir := t.TempDir()
	write := func(name, session string, started int, lines ...string) string {
		p := filepath.Join(dir, name)
		head := `{"hoist_mcp_log":2,"session":"` + session + `","started_unix_ms":` + strconv.Itoa(started) + `,"server_command":["srv"],"domain":null,"agent_model":null,"host_session":"h"}`
		os.WriteFile(p, []byte(strings.Join(append([]string{head}, lines...), "\n")+"\n"), 0o600)
		return p
	}
	later := write("a.jsonl", "s2", 2000,
		`{"t_ms":1,"from":"client","message":{"jsonrpc":"2.0","id":1,"method":"tools/list"}}`,
		`{"t_ms":2,"from":"server","message":{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","description":"A"}],"nextCursor":"c"}}}`,
		`{"t_ms":3,"from":"client","message":{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"c"}}}`,
		`{"t_ms":4,"from":"server","message":{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"b","description":"B"}]}}}`,
		`{"t_ms":5,"from":"server","message":{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}}`,
		`{"t_ms":6,"from":"client","message":{"jsonrpc":"2.0","id":3,"method":"tools/list"}}`,
		`{"t_ms":7,"from":"server","message":{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"a","description":"A","inputSchema":{"type":"object"}},{"name":"b","description":"B"}]}}}`,
	)
	earlier := write("b.jsonl", "s1", 1000,
		`{"t_ms":1,"from":"client","message":{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}}`,
		`{"t_ms":2,"from":"server","message":{"jsonrpc":"2.0","id":1,"result":{"serverInfo":{"name":"srv-1"}}}}`,
		`{"t_ms":3,"from":"client","message":{"jsonrpc":"2.0","id":2,"method":"tools/list"}}`,
		`{"t_ms":4,"from":"server","message":{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a","description":"A"}]}}}`,
	)
	hs := ToolHistories(readSessions(t, later, earlier))
	var got []string
	for _, h := range hs {
		got = append(got, h.Server+" "+strconv.Itoa(h.Sessions)+" latest "+h.Latest.Session+" "+h.Latest.Where)
		for _, c := range h.Changes {
			got = append(got, "  "+c.Session+" "+strconv.Itoa(int(c.UnixMS))+" "+c.Where+" "+c.String())
		}
	}
	want := []string{
		// The first session's server names itself; the second's has no
		// initialize, so it is named by its command.
		"srv 1 latest s2 " + later + ":7",
		"  s2 2006 " + later + ":7 a changed: inputSchema",
		"srv-1 1 latest s1 " + earlier + ":4",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("histories (-want +got):\n%s", diff)
	}
}
