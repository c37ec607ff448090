// Package binding is the binding language of flows and procedures: an
// expression says where one argument of a lookup comes from, and Eval
// finds its values in the results seen so far (docs/flow.md, "Bindings";
// docs/procedure.md). Flows store expressions as strings; the proxy, learn
// and hoist-procedure evaluate them over a Scope of tool results.
//
// The grammar:
//
//	$text                       the whole text of the site's result (the call that just returned)
//	$result                     the site's result as a JSON document
//	$result.user_id             a member of it
//	$result.address.zip         nested members
//	$result.orders[0]           an array element (negative counts from the end: [-1] is the last)
//	$result.orders[*]           fan-out: one lookup per element of the list
//	$result.items[*].item_id    fan-out, then a member of each element
//	$result["odd key"]          a member whose name is not a plain name, quoted as a JSON string
//	$call[2].orders[*]          the result of the episode's call 2 (0-based, Call.Index; a procedure's step 2)
//	$last[get_user_details].user_id
//	                            the latest result of that tool so far (the site's own included)
//	"standard"                  a constant: any JSON value (string, number, true, false, null, array, object)
//
// A result's document is its text parsed as JSON when it is JSON, and the
// text itself as a JSON string when it is not, so a tool that answers with a
// bare id ("sara_doe_496") binds with $result or $last[tool] as well as with
// $text. A plain name is letters, digits, '_' and '-'; any other member name
// is quoted. A tool name in $last[...] runs to the closing bracket, or is
// quoted when it holds a ']' or a '"'. An expression has at most one [*].
// Numbers keep their digits as written (json.Number), so a binding copies an
// id like 12345678901234567890 exactly. Results are read by jsontext's
// rules: member names compare exactly, and a name repeated in one object
// counts as its last occurrence, whether the path walks the text or the
// parsed document.
package binding
