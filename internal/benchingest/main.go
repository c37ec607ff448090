// Command benchingest is the ingest benchmark of issue 3, point 10, which
// scripts/bench-ingest.sh runs: it generates a corpus of session logs
// (1,000 sessions of about 1,000 lines by default, one in ten a host session
// of two servers), then measures, each against a baseline in the same run:
//
//   - hoist ingest of the corpus (lines/s, MB/s, peak RSS), beside DuckDB's
//     read_json loading the same files into a table (through node and
//     @duckdb/node-api, as the tests use it);
//   - hoist ingest again over the unchanged corpus;
//   - hoist export --format parquet (rows/s, peak RSS).
//
// Targets: ingest within 2× DuckDB's load time, unchanged re-ingest of 1,000
// logs under 1 s, peak RSS under 200 MB.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"

	"github.com/hoist-mcp/hoist/mcplog"
)

func main() {
	hoist := flag.String("hoist", "bin/hoist", "the hoist binary to measure")
	peers := flag.String("peers", "peers/node_modules", "the npm peers (for DuckDB); empty to skip the baseline")
	sessions := flag.Int("sessions", 1000, "sessions in the corpus")
	lines := flag.Int("lines", 1000, "lines per session, about")
	dir := flag.String("dir", "", "where to write the corpus and the store (default: a temporary directory, removed after)")
	flag.Parse()
	if err := run(*hoist, *peers, *sessions, *lines, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "benchingest:", err)
		os.Exit(1)
	}
}

func run(hoist, peers string, nSessions, nLines int, dir string) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "hoist-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	corpus := filepath.Join(dir, "logs")
	store := filepath.Join(dir, "bench.db")
	os.Remove(store)
	start := time.Now()
	files, lines, bytes, err := generate(corpus, nSessions, nLines)
	if err != nil {
		return err
	}
	fmt.Printf("corpus: %d sessions, %d log files, %d lines, %.1f MB (generated in %s)\n",
		nSessions, files, lines, float64(bytes)/1e6, time.Since(start).Round(time.Millisecond))

	var duck time.Duration
	if peers != "" {
		d, rows, err := duckdbLoad(peers, corpus)
		if err != nil {
			fmt.Printf("duckdb read_json: skipped (%v)\n", err)
		} else {
			duck = d
			fmt.Printf("duckdb read_json → table: %s, %d rows, %.0f lines/s, %.1f MB/s\n",
				d.Round(time.Millisecond), rows, float64(lines)/d.Seconds(), float64(bytes)/1e6/d.Seconds())
		}
	}

	d, rss, out, err := measure(hoist, "ingest", "--sessions", corpus, "--store", store)
	if err != nil {
		return fmt.Errorf("%v\n%s", err, out)
	}
	fmt.Printf("hoist ingest: %s, %.0f lines/s, %.1f MB/s, peak RSS %.0f MB\n",
		d.Round(time.Millisecond), float64(lines)/d.Seconds(), float64(bytes)/1e6/d.Seconds(), float64(rss)/1e6)
	fmt.Printf("  hoist said: %s", out)
	if duck > 0 {
		ratio := d.Seconds() / duck.Seconds()
		fmt.Printf("  ingest / duckdb load = %.2f× (target ≤ 2×: %s)\n", ratio, verdict(ratio <= 2))
	}
	fmt.Printf("  peak RSS target < 200 MB: %s\n", verdict(rss < 200e6))

	d, rss, out, err = measure(hoist, "ingest", "--sessions", corpus, "--store", store)
	if err != nil {
		return fmt.Errorf("%v\n%s", err, out)
	}
	fmt.Printf("hoist ingest, unchanged corpus: %s, peak RSS %.0f MB (target < 1 s: %s)\n",
		d.Round(time.Millisecond), float64(rss)/1e6, verdict(d < time.Second))

	exp := filepath.Join(dir, "export")
	d, rss, out, err = measure(hoist, "export", "--store", store, "--format", "parquet", "--out", exp)
	if err != nil {
		return fmt.Errorf("%v\n%s", err, out)
	}
	rows := int64(0)
	if m := regexp.MustCompile(`exported (\d+) rows`).FindStringSubmatch(string(out)); m != nil {
		rows, _ = strconv.ParseInt(m[1], 10, 64)
	}
	fmt.Printf("hoist export parquet: %s, %d rows, %.0f rows/s, peak RSS %.0f MB\n",
		d.Round(time.Millisecond), rows, float64(rows)/d.Seconds(), float64(rss)/1e6)
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// measure runs hoist and returns its wall time, peak RSS and stderr.
func measure(hoist string, args ...string) (time.Duration, int64, []byte, error) {
	cmd := exec.Command(hoist, args...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss * 1024 // kilobytes on Linux
	}
	return d, rss, errb.Bytes(), err
}

const duckScript = `
const path = require('path');
const duckdb = require(path.join(process.argv[1], '@duckdb', 'node-api'));
(async () => {
  const db = await duckdb.DuckDBInstance.create(':memory:');
  const con = await db.connect();
  const t0 = process.hrtime.bigint();
  await con.run("CREATE TABLE lines AS SELECT * FROM read_json('" + process.argv[2] + "/**/*.jsonl', format = 'newline_delimited', columns = {t_ms: 'BIGINT', \"from\": 'VARCHAR', message: 'JSON', raw: 'VARCHAR'})");
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const n = (await con.runAndReadAll('SELECT count(*) AS n FROM lines')).getRowObjectsJson()[0].n;
  console.log(JSON.stringify({ms, n: Number(n)}));
})().catch((e) => { console.error(e.message); process.exit(1); });
`

// duckdbLoad loads every log line into a DuckDB table with read_json, the
// baseline for ingest, and returns the time the load took inside DuckDB.
func duckdbLoad(peers, corpus string) (time.Duration, int64, error) {
	abs, err := filepath.Abs(peers)
	if err != nil {
		return 0, 0, err
	}
	cmd := exec.Command("node", "-e", duckScript, "--", abs, corpus)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, 0, err
	}
	var r struct {
		MS float64 `json:"ms"`
		N  int64   `json:"n"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return 0, 0, err
	}
	return time.Duration(r.MS * float64(time.Millisecond)), r.N, nil
}

var tools = []struct {
	name string
	read bool
}{
	{"get_user_details", true}, {"get_order_details", true}, {"get_product_details", true}, {"find_user_id_by_email", true},
	{"list_all_product_types", true}, {"cancel_pending_order", false}, {"modify_pending_order_address", false}, {"calculate", false},
}

// generate writes the corpus: one log per session, and for one session in
// ten a second server's log of the same host session, running at the same
// time.
func generate(dir string, nSessions, nLines int) (files int, lines, size int64, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, 0, 0, err
	}
	rng := rand.New(rand.NewSource(1))
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for s := 0; s < nSessions; s++ {
		start := base.Add(time.Duration(s) * 7 * time.Minute)
		host := fmt.Sprintf("bench-%d", s)
		servers := []string{"shop"}
		if s%10 == 0 {
			servers = append(servers, "docs")
		}
		for i, server := range servers {
			st := start.Add(time.Duration(i*3) * time.Millisecond)
			n, b, err := writeLog(dir, st, s*10+i, host, server, nLines/len(servers), rng)
			if err != nil {
				return files, lines, size, err
			}
			files++
			lines += n
			size += b
		}
	}
	return files, lines, size, nil
}

func writeLog(dir string, start time.Time, pid int, host, server string, nLines int, rng *rand.Rand) (int64, int64, error) {
	session := mcplog.SessionID(start, pid)
	f, err := os.Create(filepath.Join(dir, session+".jsonl"))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	domain := "retail"
	h := mcplog.Header{Log: mcplog.Version, Session: session, StartedUnixMS: start.UnixMilli(), ServerCommand: []string{server + "-server"},
		Domain: &domain, HostSession: host, ServerName: server}
	hb, _ := json.Marshal(h)
	w.Write(append(hb, '\n'))
	var n, size int64 = 1, int64(len(hb) + 1)
	var buf []byte
	put := func(t int64, from, msg string) {
		buf = mcplog.AppendLine(buf[:0], t, from, []byte(msg), true)
		w.Write(buf)
		n++
		size += int64(len(buf))
	}
	put(0, "client", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	put(3, "server", `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"`+server+`","version":"1"}}}`)
	put(4, "client", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	put(5, "client", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	var list bytes.Buffer
	list.WriteString(`{"jsonrpc":"2.0","id":1,"result":{"tools":[`)
	for i, tl := range tools {
		if i > 0 {
			list.WriteByte(',')
		}
		fmt.Fprintf(&list, `{"name":%q,"description":"A tool of the benchmark.","inputSchema":{"type":"object","properties":{"user_id":{"type":"string"},"order_id":{"type":"string"}}},"annotations":{"readOnlyHint":%v}}`, tl.name, tl.read)
	}
	list.WriteString(`]}}`)
	put(8, "server", list.String())
	t := int64(100)
	id := 2
	for n < int64(nLines) {
		put(t, "context", fmt.Sprintf(`{"role":"user","content":"Please look at order #W%07d for user_%d, thanks."}`, rng.Intn(1e7), rng.Intn(1000)))
		t += 1500 + rng.Int63n(4500)
		k := 1 + rng.Intn(3)
		ids := make([]int, k)
		for j := 0; j < k; j++ {
			tl := tools[rng.Intn(len(tools))]
			ids[j] = id
			put(t+int64(j), "client", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"user_id":"user_%d","order_id":"#W%07d"}}}`,
				id, tl.name, rng.Intn(1000), rng.Intn(1e7)))
			id++
		}
		t += 3 + rng.Int63n(30)
		for j := 0; j < k; j++ {
			text := fmt.Sprintf(`{\"order_id\":\"#W%07d\",\"user_id\":\"user_%d\",\"status\":\"pending\",\"items\":[{\"item_id\":\"%d\",\"price\":%d.%02d}]}`,
				rng.Intn(1e7), rng.Intn(1000), rng.Intn(1e9), rng.Intn(1000), rng.Intn(100))
			put(t+int64(j), "server", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"%s"}],"isError":%v}}`, ids[j], text, rng.Intn(20) == 0))
		}
		t += 1500 + rng.Int63n(4500)
		put(t, "context", `{"role":"assistant","content":"I found the order; it is pending. Shall I go on?"}`)
	}
	if err := w.Flush(); err != nil {
		return 0, 0, err
	}
	return n, size, f.Close()
}
