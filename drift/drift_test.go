package drift

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/binding"
	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
)

// crafted returns a flow of one server: get_user (read) is called count
// times; after it the agent looked up get_order reach times, binding its
// order_id to the user's first order matched times.
func crafted(count, reach, matched int) *flow.Flow {
	contract := flow.Contract{"order_id": {Type: "string", Required: true}}
	return &flow.Flow{
		Version: flow.Version, Domain: "retail", Servers: []string{"shop"}, MinSupport: 5,
		Learned: flow.Provenance{Episodes: count},
		Tools: map[string]flow.Tool{
			"get_user":     {Server: "shop", Kind: episode.Read, Input: flow.Contract{"user_id": {Type: "string", Required: true}}},
			"get_order":    {Server: "shop", Kind: episode.Read, Input: contract},
			"cancel_order": {Server: "shop", Kind: episode.Write, Input: contract},
		},
		Sites: []flow.Site{{
			Tool: "get_user", Count: flow.Count{N: count},
			Lookups: []flow.Lookup{{
				Tool: "get_order", Reach: flow.Count{N: reach}, Habit: flow.Count{N: reach},
				Bindings: []flow.Bound{{
					Args:    map[string]binding.Expr{"order_id": binding.MustParse("$result.orders[0]")},
					Matched: flow.Count{N: matched},
				}},
			}},
		}},
	}
}

func TestCompare(t *testing.T) {
	type want struct {
		drift                            bool
		added, removed, contracts, sites int
		rates                            []string // measure of each drifted rate
	}
	cases := []struct {
		name string
		now  func() *flow.Flow
		want want
	}{
		{"none: the same rates from fewer sessions", func() *flow.Flow { return crafted(50, 40, 35) }, want{}},
		{"none: chance moves", func() *flow.Flow { return crafted(50, 36, 30) }, want{}},
		{"tool added", func() *flow.Flow {
			f := crafted(50, 40, 35)
			f.Tools["get_refund"] = flow.Tool{Server: "shop", Kind: episode.Read, Input: flow.Contract{}}
			return f
		}, want{drift: true, added: 1}},
		{"tool removed", func() *flow.Flow {
			f := crafted(50, 40, 35)
			delete(f.Tools, "cancel_order")
			return f
		}, want{drift: true, removed: 1}},
		{"tools not listed: nothing removed", func() *flow.Flow {
			f := crafted(50, 40, 35)
			delete(f.Tools, "cancel_order")
			for k, t := range f.Tools {
				t.Input = nil
				f.Tools[k] = t
			}
			return f
		}, want{}},
		{"contract changed", func() *flow.Flow {
			f := crafted(50, 40, 35)
			f.Tools["get_order"] = flow.Tool{Server: "shop", Kind: episode.Read, Input: flow.Contract{"order_id": {Type: "integer", Required: true}}}
			return f
		}, want{drift: true, contracts: 1}},
		{"kind changed", func() *flow.Flow {
			f := crafted(50, 40, 35)
			t := f.Tools["get_user"]
			t.Kind = episode.Write
			f.Tools["get_user"] = t
			return f
		}, want{drift: true, contracts: 1}},
		{"reach fell", func() *flow.Flow { return crafted(50, 10, 9) }, want{drift: true, rates: []string{"reach"}}},
		{"binding match rate fell", func() *flow.Flow { return crafted(50, 40, 5) }, want{drift: true, rates: []string{"binding"}}},
		{"frequent new site", func() *flow.Flow {
			f := crafted(50, 40, 35)
			f.Sites = append(f.Sites, flow.Site{Tool: "get_user", Failed: true, Count: flow.Count{N: 12}})
			return f
		}, want{drift: true, sites: 1}},
		{"rare new site", func() *flow.Flow {
			f := crafted(50, 40, 35)
			f.Sites = append(f.Sites, flow.Site{Tool: "get_user", Failed: true, Count: flow.Count{N: 4}})
			return f
		}, want{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Compare(crafted(100, 80, 70), c.now(), Options{})
			got := want{drift: r.Drift, added: len(r.Added), removed: len(r.Removed), contracts: len(r.Contracts), sites: len(r.NewSites)}
			for _, x := range r.Rates {
				if x.Drift {
					got.rates = append(got.rates, x.Measure)
				}
			}
			if d := cmp.Diff(c.want, got, cmp.AllowUnexported(want{})); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if r.Tests != 2 || r.Threshold != DefaultAlpha/2 || r.Correction != "bonferroni" {
				t.Errorf("tests %d threshold %g correction %s", r.Tests, r.Threshold, r.Correction)
			}
		})
	}
}

// TestBonferroni: a move significant alone is not with many tests beside.
func TestBonferroni(t *testing.T) {
	old, now := crafted(100, 80, 70), crafted(100, 64, 56)
	if r := Compare(old, now, Options{}); !r.Drift {
		t.Fatalf("one test: p %g, want drift at 0.025", r.Rates[0].P)
	}
	for i := range 20 {
		name := string(rune('a'+i)) + "_lookup"
		old.Tools[name] = flow.Tool{Server: "shop", Kind: episode.Read, Input: flow.Contract{}}
		now.Tools[name] = flow.Tool{Server: "shop", Kind: episode.Read, Input: flow.Contract{}}
		l := flow.Lookup{Tool: name, Reach: flow.Count{N: 50}, Habit: flow.Count{N: 50}}
		old.Sites[0].Lookups = append(old.Sites[0].Lookups, l)
		now.Sites[0].Lookups = append(now.Sites[0].Lookups, l)
	}
	r := Compare(old, now, Options{})
	if r.Drift || r.Tests != 22 {
		t.Errorf("22 tests: drift %v (tests %d, threshold %g): %+v", r.Drift, r.Tests, r.Threshold, r)
	}
}
