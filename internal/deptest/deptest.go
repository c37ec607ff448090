// Package deptest keeps the import directions of DESIGN.md true, in the
// manner of tailscale's tstest/deptest: each package of the module imports
// only the module packages its layer names, each third-party module is
// imported only by the packages that own it, nothing a program links
// imports the testing packages, and a few dependencies that must never be
// reached, even indirectly, are not.
//
// The rules are data (Rules) and the checker a function over a list of
// packages as `go list -deps -json` describes them (Check), so a test can
// feed it a made-up list and see each rule fire. The rules for this module
// are in deptest_test.go.
package deptest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"sort"
	"strings"
)

// Package is one package as go list describes it.
type Package struct {
	ImportPath string
	Name       string
	Standard   bool
	// Imports are the packages its non-test files import.
	Imports []string
	// Deps are every package it depends on, transitively.
	Deps []string
}

// Module names who may import a third-party module, and why.
type Module struct {
	// Path is the module's path; its packages are Path and Path/....
	Path string
	// Owners are the module packages (paths relative to the module) that
	// may import it; none means tests only.
	Owners []string
	Why    string
}

// Unlinked are packages no program of the module may link, such as
// testing: a package a program links must not import them.
type Unlinked struct {
	// Packages are import paths, or prefixes of them ending in /....
	Packages []string
	Why      string
	// Except are the packages (third-party ones that cannot be changed)
	// that may import them anyway, each with the reason.
	Except map[string]string
}

// NotDep forbids a dependency, direct or not: none of From may depend on a
// package under Not.
type NotDep struct {
	From []string // module packages, relative paths
	Not  string   // an import path, or a prefix of one ending in /...
	Why  string
}

// Rules are a module's import rules.
type Rules struct {
	// Module is the module's path.
	Module string
	// Layers lists, for every package of the module (its path relative to
	// the module), the module packages it may import. A package without an
	// entry is an error: a new package must be given its place.
	Layers map[string][]string
	// Modules lists the third-party modules the module's packages may
	// import. An import of a module not listed is an error.
	Modules []Module
	// Unlinked are packages no program may link.
	Unlinked Unlinked
	// NotDeps are dependencies forbidden even indirectly.
	NotDeps []NotDep
}

// Check applies the rules to pkgs, which must hold the module's packages
// and, for the binaries' report, their dependencies (go list -deps). It
// returns one line per problem, sorted; none means the rules hold.
func (r *Rules) Check(pkgs []Package) []string {
	byPath := map[string]*Package{}
	for i := range pkgs {
		byPath[pkgs[i].ImportPath] = &pkgs[i]
	}
	var problems []string
	add := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	for _, p := range pkgs {
		rel, ok := r.rel(p.ImportPath)
		if !ok {
			continue
		}
		allowed, known := r.Layers[rel]
		if !known {
			add("%s has no entry in deptest's layers: give the new package its place (DESIGN.md, Packages)", rel)
		}
		for _, imp := range p.Imports {
			if to, ok := r.rel(imp); ok {
				switch {
				case to == "cmd" || strings.HasPrefix(to, "cmd/"):
					add("%s imports %s: nothing imports cmd/, which only wires", rel, to)
				case known && !slices.Contains(allowed, to):
					add("%s imports %s: %s may import only %s (DESIGN.md, Packages)", rel, to, rel, list(allowed))
				}
				continue
			}
			if isStandard(imp) {
				continue
			}
			m := r.module(imp)
			switch {
			case m == nil:
				add("%s imports %s, of a module deptest does not know: give it its owners and a reason", rel, imp)
			case !slices.Contains(m.Owners, rel):
				owners := "tests only"
				if len(m.Owners) > 0 {
					owners = "only " + list(m.Owners)
				}
				add("%s imports %s: %s is for %s (%s)", rel, imp, m.Path, owners, m.Why)
			}
		}
		scope := append([]string{p.ImportPath}, p.Deps...) // who may import a dependency
		if p.Name == "main" {
			for _, dep := range p.Deps {
				if !slices.ContainsFunc(r.Unlinked.Packages, func(pat string) bool { return matches(dep, pat) }) {
					continue
				}
				ours, theirs := importedBy(byPath, scope, dep, r)
				by := append(ours, theirs...)
				bad := slices.DeleteFunc(slices.Clone(by), func(imp string) bool { _, ok := r.Unlinked.Except[imp]; return ok })
				if len(by) == 0 || len(bad) > 0 {
					add("program %s links %s%s: %s", rel, dep, byWhom(bad), r.Unlinked.Why)
				}
			}
		}
		for _, nd := range r.NotDeps {
			if !slices.Contains(nd.From, rel) {
				continue
			}
			// One line per rule, naming where the forbidden packages come
			// in: arrow-go is dozens of packages, reached through one of
			// ours.
			var first string
			var entry []string
			for _, dep := range p.Deps {
				if !matches(dep, nd.Not) {
					continue
				}
				if ours, _ := importedBy(byPath, scope, dep, r); len(ours) > 0 && entry == nil {
					first, entry = dep, ours
				} else if first == "" {
					first = dep
				}
			}
			if first != "" {
				add("%s depends on %s%s: %s", rel, first, byWhom(entry), nd.Why)
			}
		}
	}
	sort.Strings(problems)
	return slices.Compact(problems)
}

// CheckRequires reports each module go.mod requires directly that the
// rules do not list: every direct dependency has named owners and a reason.
func (r *Rules) CheckRequires(direct []string) []string {
	var problems []string
	for _, path := range direct {
		if !slices.ContainsFunc(r.Modules, func(m Module) bool { return m.Path == path }) {
			problems = append(problems, fmt.Sprintf("go.mod requires %s, which deptest does not list: give it its owners and a reason", path))
		}
	}
	return problems
}

// rel returns path relative to the module, and whether it is the module's.
func (r *Rules) rel(path string) (string, bool) {
	if path == r.Module {
		return ".", true
	}
	rest, ok := strings.CutPrefix(path, r.Module+"/")
	return rest, ok
}

// module returns the listed module that holds the package path.
func (r *Rules) module(path string) *Module {
	var best *Module
	for i, m := range r.Modules {
		if (path == m.Path || strings.HasPrefix(path, m.Path+"/")) && (best == nil || len(m.Path) > len(best.Path)) {
			best = &r.Modules[i]
		}
	}
	return best
}

// importedBy lists the packages among deps that import dep directly, to
// say where a bad dependency comes in: the module's own (relative to it),
// and the others.
func importedBy(byPath map[string]*Package, deps []string, dep string, r *Rules) (ours, theirs []string) {
	for _, d := range deps {
		p := byPath[d]
		if p == nil || !slices.Contains(p.Imports, dep) {
			continue
		}
		if rel, ok := r.rel(d); ok {
			ours = append(ours, rel)
		} else {
			theirs = append(theirs, d)
		}
	}
	return ours, theirs
}

func byWhom(importers []string) string {
	if len(importers) == 0 {
		return ""
	}
	return " (imported by " + strings.Join(importers, ", ") + ")"
}

// matches reports whether path is pattern, or under it when pattern ends
// in /....
func matches(path, pattern string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == prefix || strings.HasPrefix(path, prefix+"/")
	}
	return path == pattern
}

// isStandard reports whether an import path is the standard library's: its
// first element has no dot, as the go command decides.
func isStandard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func list(s []string) string {
	if len(s) == 0 {
		return "the standard library"
	}
	return "[" + strings.Join(s, " ") + "]"
}

// List runs go list -deps over pattern (such as module/...) in dir and
// returns the packages it describes, dependencies included.
func List(dir, pattern string) ([]Package, error) {
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Name,Standard,Imports,Deps", pattern)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []Package
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p Package
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decoding go list's output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// DirectRequires returns the modules the go.mod in dir's module requires
// directly (not marked // indirect).
func DirectRequires(dir string) ([]string, error) {
	cmd := exec.Command("go", "mod", "edit", "-json")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go mod edit -json: %w", err)
	}
	var mod struct {
		Require []struct {
			Path     string
			Indirect bool
		}
	}
	if err := json.Unmarshal(out, &mod); err != nil {
		return nil, fmt.Errorf("decoding go.mod: %w", err)
	}
	var direct []string
	for _, r := range mod.Require {
		if !r.Indirect {
			direct = append(direct, r.Path)
		}
	}
	return direct, nil
}
