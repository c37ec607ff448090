package guards

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// splitLookups splits a result's text into the call's own result and the
// lookups a flow appended to it: the text item that starts with
// mcpmsg.Banner, which mcpmsg.ParseLookups reads (the agent sees those
// results as much as its own).
func splitLookups(text string) (own string, lookups []mcpmsg.Lookup) {
	at := -1
	switch {
	case strings.HasPrefix(text, mcpmsg.Banner):
		at = 0
	default:
		if i := strings.Index(text, "\n"+mcpmsg.Banner); i >= 0 {
			at = i + 1
		}
	}
	if at < 0 {
		return text, nil
	}
	ls, ok := mcpmsg.ParseLookups(text[at:])
	if !ok {
		return text, nil
	}
	return strings.TrimSuffix(text[:at], "\n"), ls
}

// The readers below take values of a tree jsontext.Parse built: strings,
// json.Number, bool, nil, []any and map[string]any. A member of another
// kind than expected reads as absent.

func getStr(m map[string]any, name string) string {
	s, _ := m[name].(string)
	return s
}

func getObj(m map[string]any, name string) map[string]any {
	o, _ := m[name].(map[string]any)
	return o
}

func getList(m map[string]any, name string) []any {
	l, _ := m[name].([]any)
	return l
}

// getNum reads a number member; ok is false when it is absent or not a
// number.
func getNum(m map[string]any, name string) (float64, bool) {
	return num(m[name])
}

func num(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	return f, err == nil
}

// getInt reads a whole number member.
func getInt(m map[string]any, name string) (int, bool) {
	f, ok := getNum(m, name)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1e9 {
		return 0, false
	}
	return int(f), true
}

// parseRecord parses a tool result's text as a JSON object: a user, an
// order, a reservation.
func parseRecord(text string) (map[string]any, bool) {
	if !strings.HasPrefix(strings.TrimSpace(text), "{") {
		return nil, false
	}
	v, ok := jsontext.ParseString(text)
	if !ok {
		return nil, false
	}
	m, ok := v.(map[string]any)
	return m, ok
}

// plainID reports whether a result text is one id (a user id, as the
// find_user_id tools answer): one word, no error.
func plainID(text string) bool {
	return text != "" && len(text) < 200 && !strings.ContainsAny(text, " \t\r\n{}[]\"") && !isErrorText(text)
}

// money writes an amount in dollars as the policies and tools speak of it.
func money(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }

// quoteValue writes a value of the call's arguments in a refusal.
func quoteValue(s string) string { return "'" + s + "'" }
