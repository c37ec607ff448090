package demo

import (
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// EmbeddedDBName names the embedded database in errors and messages.
const EmbeddedDBName = "τ²-bench's retail database (embedded)"

// tau2RetailZst is τ²-bench's retail database, testdata/tau2/db/retail.json
// byte for byte, compressed with zstd (level 22) so that hoist-mcp-demo
// stands alone after go install: 2.8 MB of JSON, 0.1 MB in the binary. Its
// license (MIT, Sierra Research) travels beside it in tau2data/LICENSE; a
// test keeps it equal to the testdata copy.
//
//go:embed tau2data/retail.json.zst
var tau2RetailZst []byte

// embeddedDB is the embedded database, parsed once per process: a Tau2DB
// is never changed (each session clones it).
var embeddedDB = sync.OnceValues(func() (*Tau2DB, error) {
	data, err := EmbeddedTau2JSON()
	if err != nil {
		return nil, err
	}
	return ParseTau2DB(EmbeddedDBName, data)
})

// EmbeddedTau2DB returns τ²-bench's retail database as carried in the
// binary: what --world tau2-retail serves when no --db names a file.
func EmbeddedTau2DB() (*Tau2DB, error) { return embeddedDB() }

// EmbeddedTau2JSON returns the embedded database's JSON, decompressed.
func EmbeddedTau2JSON() ([]byte, error) {
	zr, err := zstd.NewReader(bytes.NewReader(tau2RetailZst), zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", EmbeddedDBName, err)
	}
	defer zr.Close()
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", EmbeddedDBName, err)
	}
	return data, nil
}
