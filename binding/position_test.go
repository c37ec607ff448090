package binding

import (
	"errors"
	"testing"

	"github.com/hoist-mcp/hoist/jsontext"
)

// An element said by its position, not by its value (issue 26, lever 5):
// [said#] picks it, over the text and over the parsed document alike.
func TestSaidPosition(t *testing.T) {
	const user = `{"reservations":["ABC123","QWE456","ZFA04Y"],"orders":[{"id":"#W1","placed":"2024-05-02"},{"id":"#W2","placed":"2024-05-20"},{"id":"#W3","placed":"2024-04-30"}]}`
	for _, tc := range []struct {
		said, expr, want string
	}{
		{"I want to cancel my most recent reservation.", "$result.reservations[said#]", `["ZFA04Y"]`},
		{"Can you look at the second one?", "$result.reservations[said#]", `["QWE456"]`},
		{"Not that. The first reservation, please", "$result.reservations[said#]", `["ABC123"]`},
		{"my earliest booking", "$result.reservations[said#]", `["ABC123"]`},
		// By the elements' date member, not the list's order.
		{"What about my latest order?", "$result.orders[said#].id", `["#W2"]`},
		{"my oldest order", "$result.orders[said#].id", `["#W3"]`},
		{"the third order", "$result.orders[said#].id", `["#W3"]`},
	} {
		s := &Scope{}
		s.Said.Add(tc.said)
		s.Add(0, NewResult("get_user_details", user))
		vs, err := MustParse(tc.expr).Eval(s)
		if err != nil {
			t.Errorf("%q: %s: %v", tc.said, tc.expr, err)
			continue
		}
		if got := jsontext.Canonical(vs); got != tc.want {
			t.Errorf("%q: %s = %s, want %s", tc.said, tc.expr, got, tc.want)
		}
		s.Site.Doc()
		vs, _ = MustParse(tc.expr).Eval(s)
		if got := jsontext.Canonical(vs); got != tc.want {
			t.Errorf("%q: %s over the document = %s, want %s", tc.said, tc.expr, got, tc.want)
		}
	}
	// No position said, or one the list has not: no value.
	for _, said := range []string{"My first name is Ann.", "I fly first class.", "the fifth reservation", ""} {
		s := &Scope{}
		s.Said.Add(said)
		s.Add(0, NewResult("get_user_details", user))
		if vs, err := MustParse("$result.reservations[said#]").Eval(s); !errors.Is(err, ErrNoValue) {
			t.Errorf("%q: %v, %v, want no value", said, vs, err)
		}
	}
	e := MustParse("$result.reservations[said#]")
	if e.String() != "$result.reservations[said#]" || !e.Said() || e.FanOut() {
		t.Errorf("%s: said %v, fan-out %v", e, e.Said(), e.FanOut())
	}
}
