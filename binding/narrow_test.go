package binding

import (
	"slices"
	"testing"
)

// A fan-out over every element narrows to the elements the customer named,
// and arguments that zip over one list keep zipping (issue 26, lever 3).
func TestNarrow(t *testing.T) {
	for _, c := range []struct {
		args map[string]string
		want map[string]string // nil: no narrowing
	}{
		{map[string]string{"id": "$result.reservations[*]"}, map[string]string{"id": "$result.reservations[said]"}},
		{map[string]string{"flight_number": "$result.flights[*].flight_number", "date": "$result.flights[*].date"},
			map[string]string{"flight_number": "$result.flights[said.date].flight_number", "date": "$result.flights[said.date].date"}},
		{map[string]string{"id": "$last[get_user].orders[*]", "x": `"standard"`}, map[string]string{"id": "$last[get_user].orders[said]", "x": `"standard"`}},
		{map[string]string{"id": "$result.orders[said]"}, nil},
		{map[string]string{"id": "$result.orders[0]"}, nil},
		{map[string]string{"id": `$args.path + "/" + $lines["[FILE] *"][*]`}, nil},
	} {
		args := map[string]Expr{}
		var names []string
		for k, v := range c.args {
			args[k] = MustParse(v)
			names = append(names, k)
		}
		slices.Sort(names)
		got, ok := Narrow(names, args)
		if ok != (c.want != nil) {
			t.Errorf("Narrow(%v): ok %v", c.args, ok)
			continue
		}
		for k, w := range c.want {
			if got[k].String() != w {
				t.Errorf("Narrow(%v)[%s] = %s, want %s", c.args, k, got[k], w)
			}
		}
	}
	// Bound in a scope: the customer named one of three orders.
	sc := &Scope{Site: NewResult("get_user", `{"orders":["#W1","#W2","#W3"]}`)}
	sc.Said.Add("It is order #W2 I want to return.")
	n, _ := Narrow([]string{"order_id"}, map[string]Expr{"order_id": MustParse("$result.orders[*]")})
	objs, ok := Bind([]string{"order_id"}, n, sc, 8)
	if !ok || len(objs) != 1 || string(objs[0]) != `{"order_id":"#W2"}` {
		t.Errorf("narrowed, bound to %s (%v), want the one order named", objs, ok)
	}
}

// The agent's words name nothing: an order the agent said (Scope.Hear) is
// not said for [said] or $said, so it narrows no fan-out; what it said is
// read by agent said conditions only.
func TestNarrowNotByTheAgent(t *testing.T) {
	sc := &Scope{Site: NewResult("get_user", `{"orders":["#W1","#W2","#W3"]}`)}
	sc.Hear("user", "I want to return something.")
	sc.Hear("assistant", "Let me check order #W2 first.")
	n, _ := Narrow([]string{"order_id"}, map[string]Expr{"order_id": MustParse("$result.orders[*]")})
	if objs, ok := Bind([]string{"order_id"}, n, sc, 8); ok && len(objs) > 0 {
		t.Errorf("narrowed by the agent's words to %s", objs)
	}
	if vs, err := MustParse(`$said["#A9"][*]`).Eval(sc); err == nil && len(vs) > 0 {
		t.Errorf("$said read the agent's words: %v", vs)
	}
	if !MustParseCond(`agent said "#W2"`).Holds(sc) {
		t.Error(`agent said "#W2" does not hold`)
	}
}
