package mcpmsg

import (
	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/jsontext"
	"strconv"
)

// View is a host line read once, as the most lenient common decoder reads
// it (jsonrpc.ClassifyLenient): what the server will execute, and what
// every handler of active mode decides on (DESIGN.md, "Active mode": read
// once, decide on what the server will execute). A policy refuses a line
// whose Odd is set rather than guess which reading the server makes.
type View struct {
	jsonrpc.Lenient
	// Call is a tools/call's name and arguments (its params members read
	// under case folding, the last winning).
	Call Call
	// Meta is what the params' _meta says.
	Meta RequestMeta
	// Retry is true for a stateless-era call sent again with the input the
	// server asked for (IsRetry).
	Retry bool
	// Parts are a batch's messages, each read as a line is.
	Parts []View
}

// ReadView reads a host line (without terminator). Its Odd extends to
// the params a tools/call is decided on: name, arguments and _meta.
func ReadView(line []byte) View {
	l := jsonrpc.ClassifyLenient(line)
	if l.Kind != jsonrpc.Batch {
		return viewOf(l)
	}
	v := View{Lenient: l}
	i := 0
	for part := range jsonrpc.MessagesLenient(line) {
		pv := viewOf(part)
		if pv.Odd != "" && part.Odd == "" {
			pv.Odd = "[" + strconv.Itoa(i) + "]." + pv.Odd
		}
		if v.Odd == "" {
			v.Odd = pv.Odd
		}
		v.Parts = append(v.Parts, pv)
		i++
	}
	return v
}

// callMembers are the params members of a tools/call a policy decides on,
// and those that mark a retry (IsRetry), folded (jsontext.Fold).
var callMembers = [...]string{"name", "arguments", "_meta", "inputResponses", "requestState"}

var callFolds = [...]string{"NAME", "ARGUMENTS", "_META", "INPUTRESPONSES", "REQUESTSTATE"}

func viewOf(l jsonrpc.Lenient) View {
	v := View{Lenient: l}
	if l.Kind != jsonrpc.Request && l.Kind != jsonrpc.Notification || jsontext.Kind(l.Params) != '{' {
		return v
	}
	// One pass over params: each member the folded reading takes, and the
	// spelling of the last when it is not the exact name (LookupFold's
	// rule, for five names at once).
	var vals [len(callMembers)][]byte
	var odd [len(callMembers)]string
	for k, val := range jsontext.Members(l.Params) {
		for i, f := range callFolds {
			if string(k) == callMembers[i] {
				vals[i], odd[i] = val, ""
			} else if jsontext.FoldsTo(k, f) {
				vals[i], odd[i] = val, string(k)
			}
		}
	}
	if l.Method == MethodToolsCall {
		for _, o := range odd[:3] {
			if o != "" && v.Odd == "" {
				v.Odd = "params." + o
			}
		}
		v.Call.Name = str(vals[0])
		if vals[0] != nil && vals[0][0] == '"' && jsontext.LoneSurrogate(vals[0]) && v.Odd == "" {
			v.Odd = "params.name"
		}
		if vals[1] != nil {
			v.Call.Args = vals[1]
		}
		v.Retry = vals[3] != nil || vals[4] != nil
	}
	if m := vals[2]; jsontext.Kind(m) == '{' {
		v.Meta = readMeta(m)
	}
	return v
}

// ArgsOdd returns the path of the first member of the call's arguments
// that two common readings may read differently (jsontext.OddName), as
// "params.arguments.Order_ID"; "" when there is none. A policy that decides
// on the arguments refuses a call that has one.
func (v View) ArgsOdd() string {
	if p := jsontext.OddName(v.Call.Args); p != "" {
		return "params.arguments." + p
	}
	return ""
}
