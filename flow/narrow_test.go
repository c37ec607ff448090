package flow

import (
	"slices"
	"testing"

	"github.com/hoist-mcp/hoist/binding"
)

// A fan-out over every order narrows to the order the customer named when
// the narrowed fan-out earned more where it bound, and not when it did not
// (issue 26, lever 3).
func TestServeNarrowed(t *testing.T) {
	offered := func(n *Narrow, said string) []string {
		t.Helper()
		f := shopFlow(t)
		l := &f.site("get_user", false).Lookups[1]
		l.Bindings = []Bound{{Args: map[string]binding.Expr{"x": binding.MustParse("$result.orders[*]")}, Matched: Count{N: 9}, Calls: &Count{N: 18}, Used: &Count{N: 12}, Narrow: n}}
		if err := f.Validate(); err != nil {
			t.Fatal(err)
		}
		s, err := NewSession(f, Options{Rule: Rule{Decider: Reach, Threshold: DefaultThreshold}})
		if err != nil {
			t.Fatal(err)
		}
		if said != "" {
			s.Message("user", said)
		}
		ds, _ := serve(t, s, answerShop)
		var out []string
		for _, d := range ds {
			for _, o := range d.Offers {
				if o.Tool == "get_order" && !slices.Contains(out, string(o.Args)) {
					out = append(out, string(o.Args))
				}
			}
		}
		return out
	}
	pays := &Narrow{Calls: Count{N: 6}, Used: Count{N: 6}, AllCalls: Count{N: 12}, AllUsed: Count{N: 6}}
	if got := offered(pays, "It is order #b."); !slices.Equal(got, []string{`{"x":"#b"}`}) {
		t.Errorf("named #b, narrowing pays: offered %v, want #b only", got)
	}
	if got := offered(pays, "Hello."); len(got) != 2 {
		t.Errorf("nothing named: offered %v, want both orders", got)
	}
	loses := &Narrow{Calls: Count{N: 6}, Used: Count{N: 3}, AllCalls: Count{N: 12}, AllUsed: Count{N: 10}}
	if got := offered(loses, "It is order #b."); len(got) != 2 {
		t.Errorf("named #b, narrowing does not pay: offered %v, want both orders", got)
	}
	if got := offered(nil, "It is order #b."); len(got) != 2 {
		t.Errorf("no narrowing counts: offered %v, want both orders", got)
	}
}
