package binding

import (
	"errors"
	"testing"

	"github.com/hoist-mcp/hoist/jsontext"
)

// A date said in words binds as the date a tool takes (issue 26, lever 4):
// "May 22" is 2024-05-22, its year the session's (the latest year of a
// date in its results, not a date of birth's), unless the customer said
// one.
func TestWordDates(t *testing.T) {
	const user = `{"dob":"1985-02-01","reservations":[{"id":"ABC123","flights":[{"date":"2024-05-20","flight_number":"HAT001"},{"date":"2024-05-22","flight_number":"HAT002"}]}],"created_at":"2024-05-10T14:00:00"}`
	for _, tc := range []struct {
		said, expr, want string
	}{
		{"I'd like to fly on May 22nd instead.", `$said["9999-99-99"][-1]`, `["2024-05-22"]`},
		{"Could you search for the 22nd of May?", `$said["9999-99-99"][-1]`, `["2024-05-22"]`},
		{"Not may 20. Make it 22 May, 2025", `$said["9999-99-99"][*]`, `["2024-05-20","2025-05-22"]`},
		{"sept. 3 or so", `$said["9999-99-99"][-1]`, `["2024-09-03"]`},
		{"The flight on May 22.", `$result.reservations[0].flights[said.date].flight_number`, `["HAT002"]`},
	} {
		s := &Scope{}
		s.Said.WordDates = true
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
		// Off (the default), a date in words is not said.
		off := &Scope{}
		off.Said.Add(tc.said)
		off.Add(0, NewResult("get_user_details", user))
		if vs, err := MustParse(tc.expr).Eval(off); err == nil && len(vs) > 0 && jsontext.Canonical(vs) == tc.want {
			t.Errorf("%q: %s = %s without WordDates", tc.said, tc.expr, jsontext.Canonical(vs))
		}
	}
	// Without a year anywhere, a date said without one binds nothing.
	s := &Scope{}
	s.Said.WordDates = true
	s.Said.Add("May 22 please")
	s.Add(0, NewResult("t", `{"flights":[]}`))
	if vs, err := MustParse(`$said["9999-99-99"][-1]`).Eval(s); !errors.Is(err, ErrNoValue) {
		t.Errorf("no year: %v, %v", vs, err)
	}
	// Words that are not dates.
	for _, said := range []string{"May I change it?", "It is 45 May", "my 2 bags may be late"} {
		s := &Scope{}
		s.Said.WordDates = true
		s.Said.Add(said)
		s.Add(0, NewResult("get_user_details", user))
		if vs, err := MustParse(`$said["9999-99-99"][-1]`).Eval(s); !errors.Is(err, ErrNoValue) {
			t.Errorf("%q: %v, %v, want no date", said, vs, err)
		}
	}
}
