package flow

import (
	"errors"
	"testing"

	"github.com/hoist-mcp/hoist/binding"
	"github.com/hoist-mcp/hoist/episode"
)

const userDoc = `{"user_id":"user_7","name":{"first":"Ann"},"orders":["#W7a","#W7b"],
"items":[{"item_id":"111","qty":2},{"item_id":"222","qty":1},{"note":"x"}],"odd key":true,"big":12345678901234567890}`

func TestScopeAt(t *testing.T) {
	c0 := &episode.Call{Index: 0, Tool: "find_user_id_by_email"}
	c1 := &episode.Call{Index: 1, Tool: "get_user_details"}
	r0 := &episode.Result{CallIndex: 0, Text: "user_7"}
	r1 := &episode.Result{CallIndex: 1, Text: userDoc}
	ep := &episode.Episode{Events: []episode.Event{
		{Type: episode.EventCall, Call: c0}, {Type: episode.EventResult, Result: r0},
		{Type: episode.EventCall, Call: c1}, {Type: episode.EventResult, Result: r1},
	}}
	s := ScopeAt(ep, 0)
	if vs, err := binding.MustParse("$text").Eval(s); err != nil || vs[0] != "user_7" {
		t.Errorf("site 0: %v %v", vs, err)
	}
	if _, err := binding.MustParse("$call[1]").Eval(s); !errors.Is(err, binding.ErrNoValue) {
		t.Errorf("a later result is not in scope: %v", err)
	}
	s = ScopeAt(ep, 1)
	if vs, err := binding.MustParse("$last[find_user_id_by_email]").Eval(s); err != nil || vs[0] != "user_7" {
		t.Errorf("site 1: %v %v", vs, err)
	}
}
