package export

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/store"
)

// The pool hands out what Go's allocator would: zeroed, aligned bytes, also
// when the buffer was used and freed before, and when a Reallocate grows
// one within its capacity.
func TestPoolAllocatorZeroes(t *testing.T) {
	a := newPoolAllocator()
	for _, size := range []int{1, 64, 100, 4096, 70000} {
		b := a.Allocate(size)
		for i := range b {
			b[i] = 0xff
		}
		a.Free(b)
		c := a.Allocate(size)
		if len(c) != size || uintptr(unsafe.Pointer(unsafe.SliceData(c)))%align != 0 {
			t.Fatalf("Allocate(%d): len %d at %p", size, len(c), c)
		}
		for i, x := range c {
			if x != 0 {
				t.Fatalf("Allocate(%d) after a dirty Free: byte %d is %#x", size, i, x)
			}
		}
		for i := range c {
			c[i] = 0xff
		}
		c = a.Reallocate(cap(c)/2+size/2+1, c[:size/2])
		for i, x := range c[size/2:] {
			if x != 0 {
				t.Fatalf("Reallocate within capacity: byte %d is %#x", size/2+i, x)
			}
		}
	}
}

// An export of more rows than a batch reuses the pool's buffers from batch
// to batch; every row reads back as it was written.
func TestExportBatchesReadBack(t *testing.T) {
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "hoist.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n := 2*batchRows + 1000
	ep := &episode.Episode{ID: "big", Source: episode.SourceMCP, Domain: "retail", HostSession: "h",
		Started: time.Date(2026, 3, 8, 20, 0, 0, 0, time.UTC), Servers: []episode.Server{{Name: "shop"}}}
	for i := range n {
		c := &episode.Call{Index: i, ID: strconv.Itoa(i), Server: "shop", Tool: "get", Args: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)), By: episode.Agent}
		ep.Events = append(ep.Events, episode.Event{Type: episode.EventCall, TMS: int64(i), Call: c})
		if i%3 != 0 { // a third unanswered: nulls among the values
			r := &episode.Result{CallIndex: i, Text: fmt.Sprintf("text %d %s", i, string(make([]byte, i%50))), Raw: json.RawMessage(`{}`)}
			c.Result = r
			ep.Events = append(ep.Events, episode.Event{Type: episode.EventResult, TMS: int64(i), Result: r})
		}
	}
	if _, err := db.Put(context.Background(), store.Unit{Episodes: []*episode.Episode{ep}}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "export")
	if _, err := Export(context.Background(), db, Options{Format: Parquet, Out: out}); err != nil {
		t.Fatal(err)
	}
	rdr, err := file.OpenParquetFile(filepath.Join(out, "calls", "domain=retail", "date=2026-03-08", "part-0.parquet"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	if tbl.NumRows() != int64(n) {
		t.Fatalf("%d rows, want %d", tbl.NumRows(), n)
	}
	col := func(name string) int {
		idx := tbl.Schema().FieldIndices(name)
		if len(idx) != 1 {
			t.Fatalf("no column %s", name)
		}
		return idx[0]
	}
	row := 0
	index, text, args := tbl.Column(col("call_index")).Data().Chunks(), tbl.Column(col("result_text")).Data().Chunks(), tbl.Column(col("arguments")).Data().Chunks()
	for k := range index {
		ix, tx, ax := index[k].(*array.Int32), text[k].(*array.String), args[k].(*array.String)
		for j := range ix.Len() {
			i := int(ix.Value(j))
			if i != row {
				t.Fatalf("row %d: call_index %d", row, i)
			}
			if want := fmt.Sprintf(`{"i":%d}`, i); ax.Value(j) != want {
				t.Fatalf("row %d: arguments %q, want %q", row, ax.Value(j), want)
			}
			switch {
			case i%3 == 0 && !tx.IsNull(j):
				t.Fatalf("row %d: result_text %q, want null", row, tx.Value(j))
			case i%3 != 0 && tx.Value(j) != fmt.Sprintf("text %d %s", i, string(make([]byte, i%50))):
				t.Fatalf("row %d: result_text %q", row, tx.Value(j))
			}
			row++
		}
	}
}

// Rows gives rows to keep: the calls dataset's writer reuses its row slice
// and sees raw JSON in place, but what Rows hands out is copied.
func TestRowsAreTheirOwn(t *testing.T) {
	ep := &episode.Episode{ID: "e", Source: episode.SourceMCP, Started: time.Unix(0, 0), Servers: []episode.Server{{Name: "shop"}}}
	args := []byte(`{"a":1}`)
	for i := range 2 {
		c := &episode.Call{Index: i, ID: strconv.Itoa(i), Server: "shop", Tool: "get", Args: args, By: episode.Agent}
		ep.Events = append(ep.Events, episode.Event{Type: episode.EventCall, TMS: int64(i), Call: c})
	}
	var kept [][]any
	if err := Rows("calls", ep, store.Session{}, nil, func(row []any) error { kept = append(kept, row); return nil }); err != nil {
		t.Fatal(err)
	}
	args[2] = 'b' // the episode's bytes change after the rows were given
	if len(kept) != 2 || kept[0][1] != 0 || kept[1][1] != 1 || kept[0][9] != `{"a":1}` {
		t.Errorf("rows kept: %v", kept)
	}
}
