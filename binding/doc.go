// Package binding is the binding language of flows and procedures: an
// expression says where one argument of a lookup comes from, and Eval
// finds its values in the results seen so far and in what the customer
// said (docs/flow.md, "Bindings"; docs/procedure.md). Flows store
// expressions as strings; the proxy, learn and hoist-procedure evaluate
// them over a Scope.
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
//	$result.orders[said]        fan-out over the elements the customer named (a list's elements, an object's member names)
//	$result.items[said.name].product_id
//	                            fan-out over the elements whose name the customer said
//	$result.reservations[said#] the element the customer picked by position: "the second one",
//	                            "my most recent reservation" (by a date member when the elements have one)
//	$result.items[said~].product_id
//	                            fan-out over the elements the customer described by a string member:
//	                            said whole, or its last word ("the lamp" for "Desk Lamp"); the best described
//	$args.path                  the arguments of the site's call (the call that just returned)
//	$call[2].orders[*]          the result of the episode's call 2 (0-based, Call.Index; a procedure's step 2)
//	$last[get_user_details].user_id
//	                            the latest result of that tool so far (the site's own included)
//	$said[email][-1]            what the customer said: the emails, in the order first said
//	$said["#A9999999"][*]       the tokens of a shape (see Shapes), fanned out
//	$lines["[FILE] *"][*]       the site's text line by line: what * matched in the lines that match
//	$args.path + "/" + $lines["[FILE] *"][*]
//	                            a template: the parts' text joined (references and string constants)
//	[$result.entities[*].name]  an array: a fan-out's values collected into one argument
//	"standard"                  a constant: any JSON value (string, number, true, false, null, array, object)
//
// A result's document is its text parsed as JSON when it is JSON, and the
// text itself as a JSON string when it is not, so a tool that answers with a
// bare id ("sara_doe_496") binds with $result or $last[tool] as well as with
// $text. A plain name is letters, digits, '_' and '-'; any other member name
// is quoted. A tool name in $last[...] runs to the closing bracket, or is
// quoted when it holds a ']' or a '"'. An expression has at most one
// fan-out ([*] or [said]). Arguments (or a template's parts) that fan out
// over the same list take the same element's values, so
// $result.flights[*].flight_number and $result.flights[*].date make one
// lookup per flight; fan-outs over different lists make every combination.
// Numbers keep their digits as written (json.Number), so a binding copies an
// id like 12345678901234567890 exactly. Results are read by jsontext's
// rules: member names compare exactly, and a name repeated in one object
// counts as its last occurrence, whether the path walks the text or the
// parsed document.
//
// What the customer said is the user messages of the conversation (Said):
// a value is said when it is in one as a whole token, letters compared
// without case. Cond is a condition on a site's result, the predicates a
// flow's lookups are used under.
package binding
