package judge

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/hoist-mcp/hoist/guards"
)

// Mismatch is one of a call's values that the conversation named another
// of: the call cancels order #W2378156, while the agent's proposal and the
// customer's reply spoke only of #W2378157.
type Mismatch struct {
	// Argument is where the value is in the call's arguments, such as
	// order_id or item_ids[1].
	Argument string `json:"argument"`
	Value    string `json:"value"`
	// Named are the values of the same kind the exchange named, none of
	// them Value.
	Named []string `json:"named"`
}

// minIDDigits is how many digits a value needs to count as an id: order,
// item, user and card ids hold many, a quantity or a price few.
const minIDDigits = 4

// ProposalCheck lists the call's ids that the confirmation chose another
// of, with no model (the manual's proposal_check, logged only). Ids are
// grouped by kind (their shape: letters and punctuation alike, each digit
// a digit, so orders, items and cards are kinds apart). When what the
// agent said last and the customer's reply name ids of a kind, and the
// call uses none of them but others of that kind, the call acts on
// another record than the one the exchange spoke of: those values are
// listed. A kind the exchange never named is not judged, since nothing
// says which was meant; nor is one the call uses a named id of, since the
// others may play other parts (the item an exchange gives up beside the
// one it gets).
func ProposalCheck(c guards.Confirmation, args json.RawMessage) []Mismatch {
	said := map[string][]string{} // shape → ids named, in order of first mention
	seen := map[string]bool{}
	for _, tok := range idTokens(c.AgentSaid + "\n" + c.UserSaid) {
		if !seen[tok] {
			seen[tok] = true
			s := shape(tok)
			said[s] = append(said[s], tok)
		}
	}
	if len(said) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(args, &v) != nil {
		return nil
	}
	type value struct{ path, s string }
	var values []value
	inCall := map[string]bool{}
	walkStrings(v, "", func(path, s string) {
		if isID(s) {
			values = append(values, value{path, s})
			inCall[s] = true
		}
	})
	// A kind the call uses one of the named ids of is accounted for: the
	// others it names (a new item beside the old one) are other roles.
	accounted := map[string]bool{}
	for sh, ids := range said {
		for _, id := range ids {
			if inCall[id] {
				accounted[sh] = true
			}
		}
	}
	var out []Mismatch
	for _, x := range values {
		sh := shape(x.s)
		if named := said[sh]; len(named) > 0 && !accounted[sh] {
			out = append(out, Mismatch{Argument: x.path, Value: x.s, Named: named})
		}
	}
	return out
}

// walkStrings calls fn with every string in v and its path, members in
// name order so the result does not depend on a map's.
func walkStrings(v any, path string, fn func(path, s string)) {
	switch x := v.(type) {
	case string:
		fn(path, x)
	case []any:
		for i, e := range x {
			walkStrings(e, path+"["+strconv.Itoa(i)+"]", fn)
		}
	case map[string]any:
		names := make([]string, 0, len(x))
		for k := range x {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			p := k
			if path != "" {
				p = path + "." + k
			}
			walkStrings(x[k], p, fn)
		}
	}
}

// idTokens are the words of text that look like ids: runs of letters,
// digits, '#' and '_' with enough digits.
func idTokens(text string) []string {
	words := strings.FieldsFunc(text, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '#' || r == '_')
	})
	var out []string
	for _, w := range words {
		if isID(w) {
			out = append(out, w)
		}
	}
	return out
}

func isID(s string) bool {
	n := 0
	for _, r := range s {
		if r >= '0' && r <= '9' {
			n++
		}
	}
	return n >= minIDDigits
}

// shape is an id's kind: its digits made 9, its letters lower case, so
// #W2378156 and #W1111111 are of one kind and item 6117189161 of another.
func shape(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return '9'
		}
		return unicode.ToLower(r)
	}, s)
}
