package proxy

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// TestActiveOneOwner drives the flow's owner as the transports do, from
// several goroutines at once: 200 calls of the agent while runs are in
// flight, the server's answers out of order, one lookup whose wait ends
// exactly as its answer arrives and one whose answer comes after its wait
// ended. Every answer must reach the host once, as the server sent it or
// with the item of its own lookup, and no answer to the proxy's own
// requests may reach the host. Run under -race, it also finds any state
// touched outside the owner.
func TestActiveOneOwner(t *testing.T) {
	const calls = 200
	f, err := flow.Load("testdata/demo.flow.json")
	if err != nil {
		t.Fatal(err)
	}
	a := newActive(FlowOptions{
		Flow: f,
		Rule: flow.Rule{Decider: flow.Reach, Threshold: flow.DefaultThreshold},
		Caps: flow.Caps{PerCall: 8, PerSession: 10 * calls},
	}, "hoist-mcp-demo", func(string, ...any) {})

	// The lookups' waits end when the test says: the k-th wait is the
	// wait of request hoist-k.
	var tmu sync.Mutex
	var timers []chan time.Time
	a.newTimer = func(time.Duration) (<-chan time.Time, func()) {
		c := make(chan time.Time, 1)
		tmu.Lock()
		timers = append(timers, c)
		tmu.Unlock()
		return c, func() {}
	}
	timer := func(k int) chan time.Time {
		tmu.Lock()
		defer tmu.Unlock()
		return timers[k-1]
	}

	var hmu sync.Mutex
	delivered := map[string][]string{} // id → lines the host got
	got := make(chan string, 4*calls)  // the ids delivered, in order
	deliver := func(line []byte) {
		m := jsonrpc.Classify(jsonrpc.TrimLine(line))
		hmu.Lock()
		delivered[string(m.ID)] = append(delivered[string(m.ID)], string(jsonrpc.TrimLine(line)))
		hmu.Unlock()
		got <- string(m.ID)
	}
	a.toHost = deliver
	requests := make(chan []byte, 16)
	a.toServer = func(line []byte) { requests <- line }
	a.start()

	answer := func(id string, text string) []byte {
		return []byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":` + strconv.Quote(text) + `}]}}` + "\n")
	}
	// The server answers through fromServer, as the pumps pass its lines,
	// from several goroutines; a line the flow did not take is forwarded.
	fromServer := func(line []byte) {
		if !a.fromServer(line) {
			deliver(line)
		}
	}

	// The server: the agent's calls are answered out of order by four
	// workers; each lookup is answered at once, except hoist-3 (its wait
	// ends as the answer arrives) and hoist-7 (answered after its wait
	// ended, just before the next lookup's answer).
	work := make(chan []byte)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for line := range work {
				fromServer(line)
			}
		}()
	}
	lookupsDone := make(chan struct{})
	var late sync.WaitGroup
	go func() {
		defer close(lookupsDone)
		var stale []byte
		for req := range requests {
			m := jsonrpc.Classify(jsonrpc.TrimLine(req))
			c, _ := mcpmsg.CallOf(m)
			var arg struct{ Text string }
			json.Unmarshal(c.Args, &arg)
			ans := answer(string(m.ID), `{"v":"for-`+arg.Text+`"}`)
			k, _ := strconv.Atoi(strings.Trim(strings.TrimPrefix(string(m.ID), `"hoist-`), `"`))
			switch k {
			case 3:
				late.Add(2)
				go func() { defer late.Done(); timer(3) <- time.Now() }()
				go func() { defer late.Done(); fromServer(ans) }()
			case 7:
				timer(7) <- time.Now()
				stale = ans
			default:
				if stale != nil {
					fromServer(stale) // must find no one waiting for it
					stale = nil
				}
				late.Add(1)
				go func() { defer late.Done(); fromServer(ans) }()
			}
		}
		if stale != nil {
			fromServer(stale)
		}
	}()

	rng := rand.New(rand.NewPCG(7, 7))
	var sent []int
	var answersSent sync.WaitGroup
	for i := range calls {
		line := `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"lookup","arguments":{"text":"t` + strconv.Itoa(i) + `"}}}`
		a.fromHost([]byte(line))
		sent = append(sent, i)
		// Answer a random earlier call now and then: out of order, while
		// runs are in flight.
		if rng.IntN(2) == 0 || i == calls-1 {
			rng.Shuffle(len(sent), func(x, y int) { sent[x], sent[y] = sent[y], sent[x] })
			for _, j := range sent {
				answersSent.Add(1)
				line := answer(strconv.Itoa(j), `{"next":"n`+strconv.Itoa(j)+`"}`)
				go func() { defer answersSent.Done(); work <- line }()
			}
			sent = sent[:0]
		}
	}
	answersSent.Wait()
	// How many runs the burst started depends on the scheduler (an answer
	// that comes while a run holds another is passed on plain). Calls one
	// at a time, each answered before the next, start a run each, until
	// hoist-3 and hoist-7, whose waits the test ends, have been made.
	n := calls
	for ; n < 2*calls; n++ {
		tmu.Lock()
		made := len(timers)
		tmu.Unlock()
		if made >= 8 {
			break
		}
		id := strconv.Itoa(n)
		a.fromHost([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"lookup","arguments":{"text":"t` + id + `"}}}`))
		work <- answer(id, `{"next":"n`+id+`"}`)
		for d := range got {
			if d == id {
				break
			}
		}
	}
	close(work)
	wg.Wait()
	// Every call has been answered by the server; close hands back what
	// is still held.
	if err := a.close(); err != nil {
		t.Fatal(err)
	}
	close(requests)
	<-lookupsDone
	late.Wait()

	hmu.Lock()
	defer hmu.Unlock()
	withItem := 0
	for i := range n {
		id := strconv.Itoa(i)
		got := delivered[id]
		if len(got) != 1 {
			t.Errorf("call %d: the host got %d answers, want 1: %q", i, len(got), got)
			continue
		}
		plain := strings.TrimSuffix(string(answer(id, `{"next":"n`+id+`"}`)), "\n")
		if got[0] == plain {
			continue
		}
		item := mcpmsg.FormatLookups([]mcpmsg.Lookup{{Tool: "lookup", Args: json.RawMessage(`{"text":"n` + id + `"}`), Text: `{"v":"for-n` + id + `"}`}})
		want, _ := mcpmsg.AppendText([]byte(plain), item)
		if got[0] != string(want) {
			t.Errorf("call %d: the host got\n%s\nwant it unchanged or with its own lookup:\n%s", i, got[0], want)
		}
		withItem++
	}
	for id := range delivered {
		if mcpmsg.IsProxyID([]byte(id)) {
			t.Errorf("the host got an answer to the proxy's own request %s", id)
		}
	}
	if withItem == 0 {
		t.Error("no answer came with a lookup: the runs never ran")
	}
	if len(timers) < 8 {
		t.Errorf("%d lookups made: hoist-3 and hoist-7, whose waits the test ends, need 8", len(timers))
	}
	if len(delivered) != n {
		t.Errorf("the host got answers to %d ids, want %d", len(delivered), n)
	}
	t.Logf("%d of %d answers came with a lookup; %d lookups made", withItem, n, len(timers))
}

// TestActiveStaleAnswer: an answer that arrives after its lookup's wait
// ended is never taken for the next lookup's answer (the old design kept
// one buffered channel and read the previous lookup's answer).
func TestActiveStaleAnswer(t *testing.T) {
	f, err := flow.Load("testdata/demo.flow.json")
	if err != nil {
		t.Fatal(err)
	}
	a := newActive(FlowOptions{Flow: f, Rule: flow.Rule{Decider: flow.Reach, Threshold: flow.DefaultThreshold}}, "hoist-mcp-demo", func(string, ...any) {})
	timers := make(chan chan time.Time, 4)
	a.newTimer = func(time.Duration) (<-chan time.Time, func()) {
		c := make(chan time.Time, 1)
		timers <- c
		return c, func() {}
	}
	hosted := make(chan string, 4)
	a.toHost = func(line []byte) { hosted <- string(jsonrpc.TrimLine(line)) }
	requests := make(chan string, 4)
	a.toServer = func(line []byte) { requests <- string(jsonrpc.TrimLine(line)) }
	a.start()
	defer a.close()

	res := func(id, text string) []byte {
		return []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}]}}`+"\n", id, text))
	}
	// Call 1: its lookup hoist-1 times out; the answer comes later.
	a.fromHost([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lookup","arguments":{"text":"a"}}}`))
	if !a.fromServer(res("1", `{"next":"b"}`)) {
		t.Fatal("the flow did not hold the answer to call 1")
	}
	<-requests
	(<-timers) <- time.Now()
	if got := <-hosted; !strings.Contains(got, `"id":1`) || strings.Contains(got, mcpmsg.Banner) {
		t.Fatalf("call 1 handed back %s, want its answer alone", got)
	}
	// Call 2: its lookup hoist-2 is made; the stale answer to hoist-1
	// arrives first, then hoist-2's own.
	a.fromHost([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lookup","arguments":{"text":"c"}}}`))
	if !a.fromServer(res("2", `{"next":"d"}`)) {
		t.Fatal("the flow did not hold the answer to call 2")
	}
	if req := <-requests; !strings.Contains(req, `"hoist-2"`) {
		t.Fatalf("second lookup: %s", req)
	}
	<-timers
	if !a.fromServer(res(`"hoist-1"`, "STALE")) {
		t.Fatal("the stale answer to hoist-1 was forwarded to the host")
	}
	if !a.fromServer(res(`"hoist-2"`, "fresh")) {
		t.Fatal("the answer to hoist-2 was forwarded to the host")
	}
	got := <-hosted
	if strings.Contains(got, "STALE") || !strings.Contains(got, "fresh") {
		t.Errorf("call 2 handed back with %s, want hoist-2's answer", got)
	}
}

// TestActiveReadsContextBeforeEachDecision: the conversation the host
// appended after its call, before the answer came, is logged before the
// flow decides on that answer (manual, "--context": before each tool call
// and each decision).
func TestActiveReadsContextBeforeEachDecision(t *testing.T) {
	dir := t.TempDir()
	f, err := flow.Load("testdata/demo.flow.json")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := mcplog.Create(filepath.Join(dir, "s.jsonl"), mcplog.Header{Log: mcplog.Version, Session: "s", StartedUnixMS: 1}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	conv := filepath.Join(dir, "conv.jsonl")
	a := newActive(FlowOptions{Flow: f, Rule: flow.Rule{Decider: flow.Reach, Threshold: flow.DefaultThreshold}}, "hoist-mcp-demo", func(string, ...any) {})
	a.rec, a.context = rec, &contextTail{path: conv}
	hosted := make(chan []byte, 1)
	a.toHost = func(line []byte) { hosted <- line }
	requests := make(chan []byte, 1)
	a.toServer = func(line []byte) { requests <- line }
	a.start()

	a.fromHost([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lookup","arguments":{"text":"a"}}}`))
	os.WriteFile(conv, []byte(`{"role":"user","content":"and the next one"}`+"\n"), 0o600)
	if !a.fromServer([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"next\":\"b\"}"}]}}` + "\n")) {
		t.Fatal("the flow did not take the answer")
	}
	<-requests
	os.WriteFile(conv, []byte(`{"role":"user","content":"and the next one"}`+"\n"+`{"role":"assistant","content":"looking"}`+"\n"), 0o600)
	a.fromServer([]byte(`{"jsonrpc":"2.0","id":"hoist-1","result":{"content":[{"type":"text","text":"{}"}]}}` + "\n"))
	<-hosted
	if err := a.close(); err != nil {
		t.Fatal(err)
	}
	rec.Close()
	log, err := mcplog.ReadFile(filepath.Join(dir, "s.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range log.Entries {
		got = append(got, e.From)
	}
	// context before the decision that made the lookup; context before the
	// decision on the lookup's answer; then the answer handed back.
	if want := "context proxy context proxy"; strings.Join(got, " ") != want {
		t.Errorf("log by sender: %q, want %q", strings.Join(got, " "), want)
	}
}
