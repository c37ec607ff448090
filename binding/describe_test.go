package binding

import (
	"errors"
	"testing"

	"github.com/hoist-mcp/hoist/jsontext"
)

// An element the customer described by a value it holds, not by its id or
// its whole name (issue 26, lever 5): [said~] keeps the elements described
// best, over the text and over the parsed document alike.
func TestSaidDescribed(t *testing.T) {
	const order = `{"order_id":"#W1","items":[` +
		`{"name":"Desk Lamp","product_id":"P1","options":{"color":"black"}},` +
		`{"name":"Office Chair","product_id":"P2","options":{"color":"black"}},` +
		`{"name":"Floor Lamp","product_id":"P3","options":{"color":"white"}},` +
		`{"name":"Wireless Earbuds","product_id":"P4","options":{"color":"blue"}}]}`
	for _, tc := range []struct {
		said, want string
	}{
		// The last word of a name: both lamps.
		{"The lamp I got flickers.", `["P1","P3"]`},
		{"my earbuds stopped working", `["P4"]`},
		// A whole value said beats a last word: the desk lamp, not the other.
		{"I'd like to exchange the desk lamp.", `["P1"]`},
		// Every element described as well: both.
		{"the chair and the earbuds", `["P2","P4"]`},
	} {
		s := &Scope{}
		s.Said.Add(tc.said)
		s.Add(0, NewResult("get_order_details", order))
		e := MustParse("$result.items[said~].product_id")
		vs, err := e.Eval(s)
		if err != nil {
			t.Errorf("%q: %v", tc.said, err)
			continue
		}
		if got := jsontext.Canonical(vs); got != tc.want {
			t.Errorf("%q: %s = %s, want %s", tc.said, e, got, tc.want)
		}
		s.Site.Doc()
		vs, _ = e.Eval(s)
		if got := jsontext.Canonical(vs); got != tc.want {
			t.Errorf("%q: %s over the document = %s, want %s", tc.said, e, got, tc.want)
		}
	}
	// Nothing described: a member of a member (the color), a short word,
	// nothing said. No value (a fan-out over no element).
	for _, said := range []string{"the black one", "I want a new set", ""} {
		s := &Scope{}
		s.Said.Add(said)
		s.Add(0, NewResult("get_order_details", order))
		if vs, err := MustParse("$result.items[said~].product_id").Eval(s); len(vs) != 0 || err != nil && !errors.Is(err, ErrNoValue) {
			t.Errorf("%q: %v, %v, want no value", said, vs, err)
		}
	}
	e := MustParse("$result.items[said~].product_id")
	if e.String() != "$result.items[said~].product_id" || !e.Said() || !e.FanOut() {
		t.Errorf("%s: said %v, fan-out %v", e, e.Said(), e.FanOut())
	}
	if _, err := Parse("$result.items[*][said~]"); err == nil {
		t.Error("two fan-outs parsed")
	}
}
