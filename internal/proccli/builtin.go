package proccli

import (
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/hoist-mcp/hoist/internal/cmdutil"
	"github.com/hoist-mcp/hoist/procedure"
)

// builtinFS holds the example procedures (testdata/procedures, which a test
// keeps them equal to), so that hoist-procedure runs them by name after go
// install, with no checkout: hoist-procedure cancel-order -- … .
//
//go:embed procedures
var builtinFS embed.FS

// builtin is one example procedure carried in the binary.
type builtin struct {
	Name  string // the header's "procedure", which names it on the command line
	World string // the folder: the hoist-mcp-demo world it runs against
	Path  string // in builtinFS
	Proc  *procedure.Procedure
}

// builtins returns the example procedures, by world and name.
func builtins() ([]builtin, error) {
	var out []builtin
	err := fs.WalkDir(builtinFS, "procedures", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".jsonl" {
			return err
		}
		f, err := builtinFS.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		proc, err := procedure.Parse(f, builtinFile(p))
		if err != nil {
			return err
		}
		out = append(out, builtin{Name: proc.Name, World: path.Base(path.Dir(p)), Path: p, Proc: proc})
		return nil
	})
	return out, err
}

// builtinFile is how messages name a built-in procedure's file.
func builtinFile(p string) string {
	return strings.TrimPrefix(p, "procedures/") + " (built in)"
}

// openProcedure reads the procedure FILE names: a file when one exists
// there, else the built-in procedure of that name (cancel-order, or
// retail/cancel-order).
func openProcedure(file string) (*procedure.Procedure, error) {
	if _, err := os.Stat(file); err == nil {
		return procedure.ParseFile(file)
	}
	all, err := builtins()
	if err != nil {
		return nil, err
	}
	for _, b := range all {
		if file == b.Name || file == b.World+"/"+b.Name {
			return b.Proc, nil
		}
	}
	_, err = procedure.ParseFile(file)
	return nil, fmt.Errorf("%w (nor is it a built-in procedure: hoist-procedure --list names them)", err)
}

// writeList writes the built-in procedures as a table: name, the world
// they run against, their parameters and what they do.
func writeList(w io.Writer) error {
	all, err := builtins()
	if err != nil {
		return err
	}
	if len(all) == 0 {
		return errors.New("no built-in procedures")
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tWORLD\tPARAMS\tDESCRIPTION")
	for _, b := range all {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", b.Name, b.World, paramList(b.Proc), b.Proc.Description)
	}
	return tw.Flush()
}

// paramList lists a procedure's parameters: NAME for one the command line
// must give, NAME=DEFAULT for one with a default.
func paramList(p *procedure.Procedure) string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(p.Params)) {
		if v := p.Params[name]; v != nil {
			out = append(out, name+"="+*v)
		} else {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, ", ")
}

// runList is --list: it takes no procedure and no server.
func runList(o *options, positional []string) error {
	if len(positional) > 0 || len(o.Command) > 0 {
		return cmdutil.FlagErrorf("--list takes no procedure and no server command")
	}
	return writeList(o.IO.Out)
}
