package mcpmsg

import (
	"encoding/json"
	"strings"

	"github.com/hoist-mcp/hoist/jsontext"
)

// The protocol's eras. Revisions up to 2025-11-25 open a session with
// initialize and negotiate one version for all of it; from 2026-07-28 on
// there is no initialize and no session: every request names its version
// and the client's capabilities in its _meta, and a server answers each
// request on its own (2026-07-28 basic/versioning, "Terminology"). Versions
// are dates, so comparing them as strings orders them.
const (
	// ProtocolLegacyLatest is the newest revision of the session era.
	ProtocolLegacyLatest = "2025-11-25"
	// ProtocolModern is the first revision of the stateless era.
	ProtocolModern = "2026-07-28"
)

// IsModern reports whether version belongs to the stateless era.
func IsModern(version string) bool { return version >= ProtocolModern }

// Methods and notifications whose meaning depends on the era.
const (
	// MethodDiscover asks a stateless-era server which versions it speaks,
	// what it can do and who it is; a stateless-era host may open with it,
	// or probe with it before falling back to initialize.
	MethodDiscover = "server/discover"
	// MethodSubscriptionsListen opens a stream of change notifications, the
	// stateless era's replacement for the GET stream.
	MethodSubscriptionsListen = "subscriptions/listen"
	// MethodInitialized ends a session-era handshake.
	MethodInitialized = "notifications/initialized"
	// MethodProgress reports a request's progress, naming its token.
	MethodProgress = "notifications/progress"
)

// The _meta members the protocol reserves for itself in the stateless era
// (2026-07-28 basic/index, "_meta").
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
)

// JSON-RPC error codes hoist reads or answers with. The first three are the
// stateless era's (2026-07-28 basic/index, "Error Codes"); a server answers
// them, and an unknown method, with an HTTP status of their own.
const (
	CodeHeaderMismatch                  = -32020
	CodeMissingRequiredClientCapability = -32021
	CodeUnsupportedProtocolVersion      = -32022
	CodeMethodNotFound                  = -32601
	CodeInvalidParams                   = -32602
)

// The values of a result's resultType in the stateless era. A result
// without one reads as complete (2026-07-28 basic/index, "ResultType").
const (
	ResultComplete      = "complete"
	ResultInputRequired = "input_required"
)

// RequestMeta is what a request's params say of the protocol and of the
// request itself, in their _meta.
type RequestMeta struct {
	// ProtocolVersion is the stateless era's per-request version; "" for a
	// session-era request, which names none.
	ProtocolVersion string
	// ClientName is clientInfo's name: the MCP client, not the model.
	ClientName string
	// ProgressToken is the request's progressToken, raw; nil when it asks
	// for no progress.
	ProgressToken json.RawMessage
}

// ReadRequestMeta reads the _meta of a request's params (valid JSON).
func ReadRequestMeta(params []byte) RequestMeta {
	var rm RequestMeta
	meta, ok := jsontext.Lookup(params, "_meta")
	if !ok || jsontext.Kind(meta) != '{' {
		return rm
	}
	return readMeta(meta)
}

// readMeta reads a request's _meta object (valid JSON).
func readMeta(meta []byte) RequestMeta {
	var rm RequestMeta
	read(meta, member{MetaProtocolVersion, &rm.ProtocolVersion},
		member{MetaClientInfo, func(v []byte) { read(v, member{"name", &rm.ClientName}) }},
		member{"progressToken", func(v []byte) {
			if k := jsontext.Kind(v); k == '"' || k == '-' || k >= '0' && k <= '9' {
				rm.ProgressToken = json.RawMessage(v)
			}
		}})
	return rm
}

// ModernMeta returns the _meta of a request the proxy makes of its own to a
// server of the stateless era, which refuses a request that does not name
// its version and the client's capabilities: version, and no capability,
// since the proxy answers no input request.
func ModernMeta(version string) json.RawMessage {
	b := []byte(`{"` + MetaProtocolVersion + `":`)
	b = jsontext.AppendString(b, version, jsontext.Plain)
	b = append(b, `,"`+MetaClientCapabilities+`":{}}`...)
	return b
}

// HeaderName returns the value the stateless era mirrors into a request's
// Mcp-Name header: params.name of tools/call and prompts/get, params.uri of
// resources/read; ok is false for the other methods, which have none.
func HeaderName(method string, params []byte) (name string, ok bool) {
	var field string
	switch method {
	case MethodToolsCall, "prompts/get":
		field = "name"
	case "resources/read":
		field = "uri"
	default:
		return "", false
	}
	read(params, member{field, &name})
	return name, true
}

// ResultType returns a result's resultType: "" when it has none, which a
// session-era server never sends and which reads as ResultComplete.
func ResultType(result []byte) string {
	var t string
	read(result, member{"resultType", &t})
	return t
}

// InputRequired reports whether a result is the stateless era's
// InputRequiredResult: not the request's answer, but the server asking for
// input, with which the client sends the request again under a new id
// (2026-07-28 basic/patterns/mrtr).
func InputRequired(result []byte) bool { return ResultType(result) == ResultInputRequired }

// IsRetry reports whether a request's params send again a request that was
// answered with InputRequired: they carry inputResponses or requestState.
// The two requests are one call (the same tool and arguments), answered
// once.
func IsRetry(params []byte) bool {
	retry := false
	for k := range jsontext.Members(params) {
		if s := string(k); s == "inputResponses" || s == "requestState" {
			retry = true
		}
	}
	return retry
}

// ResultServerInfo returns the serverInfo a stateless-era result carries in
// its _meta, raw, and its name; nil and "" when it has none.
func ResultServerInfo(result []byte) (info json.RawMessage, name string) {
	meta, ok := jsontext.Lookup(result, "_meta")
	if !ok || jsontext.Kind(meta) != '{' {
		return nil, ""
	}
	read(meta, member{MetaServerInfo, func(v []byte) {
		if jsontext.Kind(v) == '{' {
			info = json.RawMessage(v)
			read(v, member{"name", &name})
		}
	}})
	return info, name
}

// AppendErrorObject appends a JSON-RPC error response to id (raw JSON; nil
// is null) whose error member is errObj exactly as a server sent it, code,
// message and data, without a line terminator: the answer a host gets when
// the server's error came without the request's id (an HTTP error body).
func AppendErrorObject(dst []byte, id, errObj json.RawMessage) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"error":`...)
	dst = append(dst, errObj...)
	return append(dst, '}')
}

// HeaderParam is a tool argument the stateless era mirrors into an HTTP
// header of each tools/call over Streamable HTTP, because the tool's
// inputSchema marks it with x-mcp-header (2026-07-28
// transports/streamable-http, "Custom Headers from Tool Parameters").
type HeaderParam struct {
	// Header is the name's part after Mcp-Param-.
	Header string
	// Path is the chain of properties from the schema's root to it.
	Path []string
}

// HeaderParams returns the arguments a tool's inputSchema (valid JSON)
// marks with x-mcp-header, as the transport allows them: reachable from the
// root through properties alone, named by an HTTP token. A mark anywhere
// else is not followed.
func HeaderParams(schema []byte) []HeaderParam {
	var out []HeaderParam
	var walk func(obj []byte, path []string)
	walk = func(obj []byte, path []string) {
		props, ok := jsontext.Lookup(obj, "properties")
		if !ok || jsontext.Kind(props) != '{' {
			return
		}
		for k, v := range jsontext.Members(props) {
			if jsontext.Kind(v) != '{' {
				continue
			}
			p := append(path[:len(path):len(path)], string(k))
			if h, ok := jsontext.Lookup(v, "x-mcp-header"); ok && jsontext.Kind(h) == '"' {
				if name := jsontext.Unquote(h); isToken(name) {
					out = append(out, HeaderParam{Header: name, Path: p})
				}
			}
			walk(v, p)
		}
	}
	if jsontext.Kind(schema) == '{' {
		walk(schema, nil)
	}
	return out
}

// isToken reports whether s is an HTTP field name (RFC 9110 §5.1: 1*tchar).
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}

// HeaderValue returns the argument at path in args (a JSON object) as its
// header's text: a string as it is, an integer's digits, true or false; ok
// is false when it is absent, null, or of another kind, and then no header
// is sent.
func HeaderValue(args []byte, path []string) (string, bool) {
	v := args
	for _, name := range path {
		next, ok := jsontext.Lookup(v, name)
		if !ok || jsontext.Kind(next) != '{' && name != path[len(path)-1] {
			return "", false
		}
		v = next
	}
	switch k := jsontext.Kind(v); {
	case k == '"':
		return jsontext.Unquote(v), true
	case string(v) == "true" || string(v) == "false":
		return string(v), true
	case k == '-' || k >= '0' && k <= '9':
		if strings.ContainsAny(string(v), ".eE") {
			return "", false // the transport mirrors integers only
		}
		return string(v), true
	}
	return "", false
}
