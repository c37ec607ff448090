package demo

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestEmbeddedTau2DBIsTestdatas: the database in the binary is the testdata
// copy byte for byte (recompress it with
// zstd --ultra -22 testdata/tau2/db/retail.json -o internal/demo/tau2data/retail.json.zst
// when that changes), and it loads.
func TestEmbeddedTau2DBIsTestdatas(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("..", "..", "testdata", "tau2", "db", "retail.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := EmbeddedTau2JSON()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the embedded database (%d bytes) differs from testdata/tau2/db/retail.json (%d bytes)", len(got), len(want))
	}
	if len(tau2RetailZst) > 1_000_000 {
		t.Errorf("the embedded database is %d bytes compressed, want under 1 MB", len(tau2RetailZst))
	}
	db, err := EmbeddedTau2DB()
	if err != nil {
		t.Fatal(err)
	}
	if len(db.users) == 0 || len(db.orders) == 0 || len(db.products) == 0 {
		t.Errorf("embedded database: %d users, %d orders, %d products", len(db.users), len(db.orders), len(db.products))
	}
}
