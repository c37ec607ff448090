package export

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// batchRows is how many rows a record batch (and a Parquet row group) holds
// at most, which bounds the memory an export uses whatever the store's size.
const batchRows = 8 << 10

// tableWriter writes one dataset's rows of one partition to one file.
type tableWriter interface {
	Append(row []any) error
	// Close flushes and closes the file; the file is complete only when it
	// returns nil.
	Close() error
}

func arrowType(t colType) arrow.DataType {
	switch t {
	case tInt32:
		return arrow.PrimitiveTypes.Int32
	case tInt64:
		return arrow.PrimitiveTypes.Int64
	case tFloat64:
		return arrow.PrimitiveTypes.Float64
	case tBool:
		return arrow.FixedWidthTypes.Boolean
	case tTimestamp:
		return arrow.FixedWidthTypes.Timestamp_ms
	case tStringList:
		return arrow.ListOf(arrow.BinaryTypes.String)
	default:
		return arrow.BinaryTypes.String
	}
}

// arrowSchema is the dataset's Arrow schema, with the store's schema
// version and the dataset's name in its metadata (Parquet carries them as
// file key/value metadata).
func arrowSchema(d *dataset, schemaVersion int) *arrow.Schema {
	fields := make([]arrow.Field, len(d.Columns))
	for i, c := range d.Columns {
		fields[i] = arrow.Field{Name: c.Name, Type: arrowType(c.Type), Nullable: c.Nullable}
	}
	md := arrow.NewMetadata(
		[]string{"hoist.schema_version", "hoist.dataset", "hoist.export_format"},
		[]string{strconv.Itoa(schemaVersion), d.Name, strconv.Itoa(FormatVersion)},
	)
	return arrow.NewSchema(fields, &md)
}

// recordWriter collects rows into a RecordBuilder and hands full batches to
// flush.
type recordWriter struct {
	d     *dataset
	b     *array.RecordBuilder
	n     int
	flush func(arrow.RecordBatch) error
	close func() error
}

func newRecordWriter(d *dataset, schema *arrow.Schema, mem memory.Allocator) *recordWriter {
	return &recordWriter{d: d, b: array.NewRecordBuilder(mem, schema)}
}

func (w *recordWriter) Append(row []any) error {
	if len(row) != len(w.d.Columns) {
		return fmt.Errorf("dataset %s: row of %d values for %d columns", w.d.Name, len(row), len(w.d.Columns))
	}
	for i, c := range w.d.Columns {
		if err := appendValue(w.b.Field(i), c, row[i]); err != nil {
			return fmt.Errorf("dataset %s, column %s: %w", w.d.Name, c.Name, err)
		}
	}
	w.n++
	if w.n >= batchRows {
		return w.emit()
	}
	return nil
}

func (w *recordWriter) emit() error {
	rec := w.b.NewRecordBatch()
	defer rec.Release()
	w.n = 0
	return w.flush(rec)
}

func (w *recordWriter) Close() error {
	var err error
	if w.n > 0 {
		err = w.emit()
	}
	w.b.Release()
	if cerr := w.close(); err == nil {
		err = cerr
	}
	return err
}

func appendValue(b array.Builder, c column, v any) error {
	if v == nil {
		if !c.Nullable {
			return fmt.Errorf("null in a column that is not nullable")
		}
		b.AppendNull()
		return nil
	}
	switch c.Type {
	case tString, tJSON:
		b.(*array.StringBuilder).Append(v.(string))
	case tInt32:
		b.(*array.Int32Builder).Append(int32(v.(int)))
	case tInt64:
		b.(*array.Int64Builder).Append(v.(int64))
	case tFloat64:
		b.(*array.Float64Builder).Append(v.(float64))
	case tBool:
		b.(*array.BooleanBuilder).Append(v.(bool))
	case tTimestamp:
		b.(*array.TimestampBuilder).Append(arrow.Timestamp(v.(time.Time).UnixMilli()))
	case tStringList:
		lb := b.(*array.ListBuilder)
		lb.Append(true)
		vb := lb.ValueBuilder().(*array.StringBuilder)
		for _, s := range v.([]string) {
			vb.Append(s)
		}
	default:
		return fmt.Errorf("unknown column type %d", c.Type)
	}
	return nil
}

// freeText are the string columns of text that seldom repeats.
var freeText = map[string]bool{"result_text": true, "content": true}

// newParquetWriter writes Parquet with zstd pages; each batch of rows is one
// row group.
func newParquetWriter(f *os.File, d *dataset, schemaVersion int, mem memory.Allocator) (tableWriter, error) {
	schema := arrowSchema(d, schemaVersion)
	opts := []parquet.WriterProperty{
		parquet.WithCompression(compress.Codecs.Zstd),
		// zstd's fastest level: the default level took a fifth of an
		// export's time for files a few percent smaller.
		parquet.WithCompressionLevel(1),
		parquet.WithAllocator(mem),
		parquet.WithCreatedBy("hoist"),
		parquet.WithMaxRowGroupLength(batchRows),
	}
	// A dictionary pays for names that repeat (tools, servers, sessions),
	// not for JSON and free text, which hardly repeat: building their
	// dictionary, then falling back to plain pages, took another fifth.
	for _, c := range d.Columns {
		if c.Type == tJSON || freeText[c.Name] {
			opts = append(opts, parquet.WithDictionaryFor(c.Name, false))
		}
	}
	props := parquet.NewWriterProperties(opts...)
	// The file is synced and closed by its owner: hide its Close from the
	// Parquet writer, which would close it.
	fw, err := pqarrow.NewFileWriter(schema, struct{ io.Writer }{f}, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(mem)))
	if err != nil {
		return nil, err
	}
	w := newRecordWriter(d, schema, mem)
	w.flush = fw.Write
	w.close = fw.Close
	return w, nil
}

// newIPCWriter writes an Arrow IPC file (Feather v2) with zstd buffers.
func newIPCWriter(f *os.File, d *dataset, schemaVersion int, mem memory.Allocator) (tableWriter, error) {
	schema := arrowSchema(d, schemaVersion)
	iw, err := ipc.NewFileWriter(struct{ io.Writer }{f}, ipc.WithSchema(schema), ipc.WithAllocator(mem), ipc.WithZstd())
	if err != nil {
		return nil, err
	}
	w := newRecordWriter(d, schema, mem)
	w.flush = iw.Write
	w.close = iw.Close
	return w, nil
}

// jsonlWriter writes one JSON object per row; timestamps as RFC 3339 UTC
// strings, JSON columns as strings (as in the other formats).
type jsonlWriter struct {
	d  *dataset
	bw *bufio.Writer
}

func newJSONLWriter(f *os.File, d *dataset) tableWriter {
	return &jsonlWriter{d: d, bw: bufio.NewWriterSize(f, 256<<10)}
}

func (w *jsonlWriter) Append(row []any) error {
	if len(row) != len(w.d.Columns) {
		return fmt.Errorf("dataset %s: row of %d values for %d columns", w.d.Name, len(row), len(w.d.Columns))
	}
	buf := []byte{'{'}
	for i, c := range w.d.Columns {
		if i > 0 {
			buf = append(buf, ',')
		}
		k, _ := json.Marshal(c.Name)
		buf = append(buf, k...)
		buf = append(buf, ':')
		v := row[i]
		if t, ok := v.(time.Time); ok {
			v = t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("dataset %s, column %s: %w", w.d.Name, c.Name, err)
		}
		buf = append(buf, b...)
	}
	buf = append(buf, '}', '\n')
	_, err := w.bw.Write(buf)
	return err
}

func (w *jsonlWriter) Close() error { return w.bw.Flush() }
