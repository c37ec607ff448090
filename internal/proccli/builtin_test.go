package proccli

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoist-mcp/hoist/internal/testbin"
)

// TestBuiltinsAreTestdatas: the procedures the binary carries are
// testdata/procedures, file for file and byte for byte.
func TestBuiltinsAreTestdatas(t *testing.T) {
	dir := filepath.Join(testbin.Root(), "testdata", "procedures")
	var want []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		want = append(want, filepath.ToSlash(rel))
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		got, err := fs.ReadFile(builtinFS, "procedures/"+filepath.ToSlash(rel))
		if err != nil {
			t.Errorf("%s is not built in (copy it to internal/proccli/procedures/): %v", rel, err)
		} else if !bytes.Equal(got, b) {
			t.Errorf("the built-in %s differs from testdata's", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	all, err := builtins()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(want) {
		t.Errorf("%d built-in procedures, testdata has %d files: %q", len(all), len(want), want)
	}
}

// TestStandalone runs the programs as go install leaves them: built
// outside a checkout and run from an empty directory, the demo's worlds and
// the example procedures (named by name) still work, and --version names
// the build rather than "dev".
func TestStandalone(t *testing.T) {
	proc, demo := testbin.Build(t, "hoist-procedure"), testbin.Build(t, "hoist-mcp-demo")
	run := func(t *testing.T, stdin string, args ...string) (string, string, error) {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = testbin.Env()
		cmd.Dir = t.TempDir()
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	t.Run("list", func(t *testing.T) {
		out, errs, err := run(t, "", proc, "--list")
		if err != nil {
			t.Fatalf("%v: %s", err, errs)
		}
		for _, want := range []string{"NAME", "cancel-order", "order-status", "review-orders", "retail", "email, reason=no longer needed"} {
			if !strings.Contains(out, want) {
				t.Errorf("--list printed\n%s\nwant %q in it", out, want)
			}
		}
	})
	t.Run("a procedure by name", func(t *testing.T) {
		for _, name := range []string{"cancel-order", "retail/order-status"} {
			out, errs, err := run(t, "", proc, "--think", "0", "--param", "email=c7@example.com", name, "--", demo, "--world", "retail")
			if err != nil {
				t.Fatalf("%s: %v: %s", name, err, errs)
			}
			if !strings.Contains(out, "find_user_id_by_email") {
				t.Errorf("%s: report\n%s", name, out)
			}
		}
	})
	t.Run("neither a file nor a name", func(t *testing.T) {
		_, errs, err := run(t, "", proc, "cancel-ordr", "--", demo)
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != ExitUsage || !strings.Contains(errs, "cancel-ordr") || !strings.Contains(errs, "--list") {
			t.Errorf("exit %v, stderr %q; want exit 2 naming the argument and --list", err, errs)
		}
	})
	t.Run("the worlds", func(t *testing.T) {
		const read = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_order_details","arguments":{"order_id":"#W6779827"}}}` + "\n"
		for _, world := range []string{"echo", "retail", "tau2-retail"} {
			out, errs, err := run(t, read, demo, "--world", world)
			if err != nil || !strings.Contains(out, `"id":1`) || strings.Contains(out, `"isError":true`) && world == "tau2-retail" {
				t.Errorf("--world %s: %v, stdout %s, stderr %s", world, err, out, errs)
			}
		}
	})
	t.Run("version", func(t *testing.T) {
		// go build stamps the VCS revision when .git is a directory (not
		// in a git worktree, whose .git is a file), unless told not to:
		// -buildvcs=true overrides a GOFLAGS=-buildvcs=false.
		if fi, err := os.Stat(filepath.Join(testbin.Root(), ".git")); err != nil || !fi.IsDir() {
			t.Skip("not built from a git checkout")
		}
		dir := t.TempDir()
		for _, name := range []string{"hoist-procedure", "hoist-mcp-demo"} {
			build := exec.Command("go", "build", "-buildvcs=true", "-o", dir, "./cmd/"+name)
			build.Dir = testbin.Root()
			if b, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build %s: %v\n%s", name, err, b)
			}
		}
		for _, bin := range []string{filepath.Join(dir, "hoist-procedure"), filepath.Join(dir, "hoist-mcp-demo")} {
			out, errs, err := run(t, "", bin, "--version")
			if err != nil || strings.Contains(out, " dev") || !strings.HasPrefix(out, filepath.Base(bin)+" ") {
				t.Errorf("%s --version: %v, %q %q; want the module version or the VCS revision", filepath.Base(bin), err, out, errs)
			}
		}
	})
}
