package episode

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/mcpmsg"
)

// TestCommitCalls: the calls hoist-mcp --commit made for a hoist_commit
// are the agent's, in the turn of that hoist_commit; the call the policy
// check refused, which never reached the server, is one too, with the
// refusal as its result; the call not run is none.
func TestCommitCalls(t *testing.T) {
	modify := `{"order_id":"#W7b","payment_method_id":"paypal_1000007"}`
	cancelCheaper := `{"order_id":"#W7b","reason":"found it cheaper"}`
	refusal := "Refused by the policy check, so cancel_pending_order was not run and nothing changed: 'found it cheaper' is not an accepted reason (policy check retail.cancel_reason)"
	steps := []mcpmsg.CommitStep{
		{CommitCall: mcpmsg.CommitCall{Name: "modify_pending_order_payment", Args: json.RawMessage(modify)}, Status: mcpmsg.CommitDone, Text: "order #W7b"},
		{CommitCall: mcpmsg.CommitCall{Name: "cancel_pending_order", Args: json.RawMessage(cancelCheaper)}, Status: mcpmsg.CommitRefused, Text: refusal},
		{CommitCall: mcpmsg.CommitCall{Name: "cancel_pending_order", Args: json.RawMessage(`{"order_id":"#W7a"}`)}, Status: mcpmsg.CommitNotRun},
	}
	commitArgs := `{"calls":[{"name":"modify_pending_order_payment","arguments":` + modify + `},{"name":"cancel_pending_order","arguments":` + cancelCheaper + `},{"name":"cancel_pending_order","arguments":{"order_id":"#W7a"}}]}`
	log := parseLog(t, header("s1", 0, ""),
		"10 client "+callMsg("4", "get_order_details", `{"order_id":"#W7b"}`),
		"12 server "+okMsg("4", "order #W7b"),
		`3000 context {"role":"user","content":"yes, do both"}`,
		"4000 client "+callMsg("5", "hoist_commit", commitArgs),
		"4001 proxy "+callMsg(`"hoist-commit-1"`, "modify_pending_order_payment", modify),
		"4005 server "+okMsg(`"hoist-commit-1"`, "order #W7b"),
		"4006 proxy "+string(mcpmsg.AppendCommitResult(nil, json.RawMessage("5"), steps)),
		"9000 client "+callMsg("6", "get_order_details", `{"order_id":"#W7b"}`),
		"9002 server "+okMsg("6", "order #W7b"),
	)
	ep, err := FromLog(log, Options{})
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		ID, Tool string
		By       Actor
		Turn     int
		Text     string
		Error    bool
	}
	var gots []got
	for _, c := range ep.Calls() {
		text := c.Result.Text
		if c.Tool == "hoist_commit" {
			text, _, _ = strings.Cut(text, ";")
		}
		gots = append(gots, got{c.ID, c.Tool, c.By, c.Turn, text, c.Result.IsError})
	}
	want := []got{
		{"4", "get_order_details", Agent, 0, "order #W7b", false},
		{"5", "hoist_commit", Agent, 1, "hoist_commit stopped at call 2 of 3, which was refused by the policy check", true},
		{`"hoist-commit-1"`, "modify_pending_order_payment", Agent, 1, "order #W7b", false},
		{"", "cancel_pending_order", Agent, 1, refusal, true},
		{"6", "get_order_details", Agent, 2, "order #W7b", false},
	}
	if diff := cmp.Diff(want, gots); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if n := len(ep.Turns); n != 3 {
		t.Errorf("%d turns, want 3", n)
	}
	if c := ep.Calls()[3]; string(c.Args) != cancelCheaper {
		t.Errorf("the refused call's arguments %s, want %s", c.Args, cancelCheaper)
	}
}
