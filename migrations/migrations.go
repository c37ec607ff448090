// Package migrations carries the episode store's schema as numbered SQL
// files, embedded in the binary so that a hoist of any version knows exactly
// which schema it writes (DESIGN.md, "Store"). The store applies them in
// order at open, each in its own transaction.
//
// A file is named NNNN_what.sql; NNNN is its version. Files are never edited
// once released: a change is a new file.
package migrations

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

//go:embed *.sql
var files embed.FS

// Migration is one numbered schema change.
type Migration struct {
	Version int
	Name    string // the file name
	SQL     string
}

// All returns the migrations in version order. Versions start at 1 and
// have no gaps, which a test keeps true.
func All() ([]Migration, error) {
	names, err := fs.Glob(files, "*.sql")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, n := range names {
		num, _, ok := strings.Cut(n, "_")
		if !ok {
			return nil, fmt.Errorf("migration %s: name is not NNNN_what.sql", n)
		}
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("migration %s: name is not NNNN_what.sql", n)
		}
		b, err := files.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: n, SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %s: expected version %d", m.Name, i+1)
		}
	}
	return out, nil
}

// Latest returns the highest version the embedded migrations reach.
func Latest() int {
	all, err := All()
	if err != nil || len(all) == 0 {
		return 0
	}
	return all[len(all)-1].Version
}
