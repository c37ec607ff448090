package turns

import (
	"strings"
	"testing"
)

func TestMedian(t *testing.T) {
	tests := []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
	}
	for _, tt := range tests {
		if got := Median(tt.xs); got != tt.want {
			t.Errorf("Median(%v) = %v, want %v", tt.xs, got, tt.want)
		}
	}
}

func TestEchoCall(t *testing.T) {
	msg := EchoMessage(100)
	if len(msg) != 100 || strings.ContainsAny(msg, `"\\`) {
		t.Fatalf("EchoMessage(100) = %q", msg)
	}
	got := string(AppendEchoCall([]byte("x"), 42, "hi"))
	want := `x{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`
	if got != want {
		t.Errorf("AppendEchoCall = %s, want %s", got, want)
	}
	answer := []byte(`{"result":{"content":[{"type":"text","text":"Echo: hi"}]},"jsonrpc":"2.0","id":42}`)
	if !Echoes(answer, "hi") {
		t.Errorf("Echoes(%s) = false", answer)
	}
	if Echoes([]byte(`{"result":{}}`), "hi") || Echoes(answer, strings.Repeat("x", 1000)) {
		t.Error("Echoes accepts an answer that does not echo the message")
	}
}

func TestCell(t *testing.T) {
	g := Grid(10, 2)
	if len(g) != 4 || g[0].String() != "16 B, 1 in flight" || g[3].String() != "64 KiB, 8 in flight" || g[3].Calls != 2 {
		t.Errorf("Grid(10, 2) = %v", g)
	}
}

func TestTurns(t *testing.T) {
	for _, calls := range []int{1, 99, 100, 101, 250, 2000} {
		ts := Turns(Cell{Size: 16, InFlight: 8, Calls: calls})
		sum := 0
		for _, c := range ts {
			if c.Calls > Turn || c.Calls < 1 || c.Size != 16 || c.InFlight != 8 {
				t.Errorf("Turns(%d calls): a turn %+v", calls, c)
			}
			sum += c.Calls
		}
		if sum != calls || len(ts) != (calls+Turn-1)/Turn {
			t.Errorf("Turns(%d calls) = %d turns of %d calls in all", calls, len(ts), sum)
		}
	}
	// 64 sessions take turns of 256 calls: four each.
	c := Cell{Size: 16, InFlight: 64, Calls: 1024, Sessions: true}
	if ts := Turns(c); len(ts) != 4 || ts[0].Calls != 256 || !ts[0].Sessions {
		t.Errorf("Turns(%+v) = %+v", c, ts)
	}
	if c.String() != "16 B, 64 sessions" {
		t.Errorf("a sessions cell is named %q", c)
	}
	rows := Rows(Side{Name: "b"}, Side{Name: "s"}, []Result{{Cell: c, Ratios: []float64{2, 4}}}, 3)
	if rows[0].Table != "calls/s over sessions: s / b" || rows[0].Scale != 64 || rows[0].Value != 3 {
		t.Errorf("Rows of a sessions cell: %+v", rows[0])
	}
}

// TestPrintTarget: the table prints the target it checks, 0.95 as 0.95
// (it once printed "≥ 0.9×" beside a 0.91× marked MISSED).
func TestPrintTarget(t *testing.T) {
	r := Result{Cell: Cell{Size: 16, InFlight: 1, Calls: 10}, Rates: [2][]float64{{100}, {91}}, Ratios: []float64{0.91}, Calls: 10}
	for _, tt := range []struct {
		target float64
		want   string
	}{{0.95, "≥ 0.95×"}, {1, "≥ 1.0×"}, {3, "≥ 3.0×"}} {
		var b strings.Builder
		Print(&b, Side{Name: "base"}, Side{Name: "subject"}, []Result{r}, tt.target)
		if !strings.Contains(b.String(), tt.want) {
			t.Errorf("target %v: the table says\n%s\nwant %q in it", tt.target, b.String(), tt.want)
		}
	}
}
