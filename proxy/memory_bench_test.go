package proxy

import (
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/mcplog"
)

// BenchmarkFlowRetained serves a flow over b.N of the agent's calls in one
// session, each followed by the lookup the flow binds and its answer, with
// the session log and the flow log written, and reports the heap the
// session still holds after them, per call (issue 23, point 6: --flow grew
// 1.5–2 KB of RSS per call). Run it over 100,000 calls:
//
//	go test ./proxy -run '^$' -bench FlowRetained -benchtime 100000x
func BenchmarkFlowRetained(b *testing.B) {
	f, err := flow.Load("testdata/demo.flow.json")
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	a := newActive(FlowOptions{
		Flow: f,
		Rule: flow.Rule{Decider: flow.Reach, Threshold: flow.DefaultThreshold},
		Caps: flow.Caps{PerCall: 8, PerSession: 1 << 30, Questions: 300},
	}, "hoist-mcp-demo", func(string, ...any) {})
	a.session = "bench"
	rec, err := mcplog.Create(filepath.Join(dir, "s.jsonl"), mcplog.Header{Log: mcplog.Version, Session: "s", StartedUnixMS: 1}, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	a.rec = rec
	if a.flowLog, err = mcplog.CreateJSONL(filepath.Join(dir, "s.flow.jsonl")); err != nil {
		b.Fatal(err)
	}
	handed := make(chan struct{}, 1)
	a.toHost = func([]byte) { handed <- struct{}{} }
	a.toServer = func(line []byte) {
		// The server answers the proxy's lookup at once.
		m := jsonrpc.Classify(jsonrpc.TrimLine(line))
		a.fromServer(answerLine(string(m.ID), `{\"text\":\"b\"}`))
	}
	a.start()
	defer a.close()
	line := func(i int) (call, answer []byte) {
		id := strconv.Itoa(i + 3)
		n := strconv.Itoa(i)
		call = []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"lookup","arguments":{"text":"a` + n + `","next":"b` + n + `"}}}`)
		return call, answerLine(id, `{\"next\":\"b`+n+`\",\"text\":\"a`+n+`\"}`)
	}
	serve := func(i int) {
		call, answer := line(i)
		rec.Record(mcplog.FromClient, call)
		a.fromHost(call)
		rec.Record(mcplog.FromServer, jsonrpc.TrimLine(answer))
		if a.fromServer(answer) {
			<-handed
		}
	}
	for i := range 100 { // the session's steady state
		serve(-1 - i)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := range b.N {
		serve(i)
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(b.N), "retained-B/call")
	runtime.KeepAlive(a)
}

// answerLine is the server's answer to id with one text item (text is
// already escaped for a JSON string), terminator included.
func answerLine(id, text string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"` + text + `"}],"isError":false}}` + "\n")
}
