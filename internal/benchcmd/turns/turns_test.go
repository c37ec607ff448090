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
