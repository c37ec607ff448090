package learn

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/hoist-mcp/hoist/episode"
)

// learnTau2 learns a flow of domain from the τ² sample's results files.
func learnTau2(t testing.TB, domain string, opt Options) *Learner {
	t.Helper()
	dir := filepath.Join("..", "testdata", "tau2")
	kinds, err := episode.LoadToolKinds(filepath.Join(dir, "tool_kinds.json"))
	if err != nil {
		t.Fatal(err)
	}
	schemas, err := episode.LoadToolSchemas(filepath.Join(dir, "tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "results", domain+"-*.json"))
	if len(files) == 0 {
		t.Fatalf("no %s results in %s", domain, dir)
	}
	opt.Domain = domain
	l := New(opt)
	for _, f := range files {
		r, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		err = episode.EachTau2(r, f, episode.Tau2Options{Kinds: kinds, Schemas: schemas, Domain: domain}, func(ep *episode.Episode) error {
			l.Add(ep)
			return nil
		})
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return l
}

func TestLearnTau2Sample(t *testing.T) {
	for _, domain := range []string{"retail", "airline"} {
		t.Run(domain, func(t *testing.T) {
			l := learnTau2(t, domain, Options{})
			f := l.Flow()
			if err := f.Validate(); err != nil {
				t.Fatalf("learned flow does not validate: %v", err)
			}
			a, err := f.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			b, _ := learnTau2(t, domain, Options{}).Flow().Marshal()
			if !bytes.Equal(a, b) {
				t.Errorf("two learns of the same input differ")
			}
			if len(f.Sites) == 0 || f.Learned.Episodes == 0 {
				t.Errorf("learned nothing: %d sites from %d episodes", len(f.Sites), f.Learned.Episodes)
			}
			for _, s := range f.Sites {
				for _, l := range s.Lookups {
					if f.Tools[l.Tool].Kind != episode.Read {
						t.Errorf("site %s looks up %s, a %s tool", s.Tool, l.Tool, f.Tools[l.Tool].Kind)
					}
				}
			}
		})
	}
}
