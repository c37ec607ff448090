package mcpmsg

import (
	"encoding/json"

	"github.com/hoist-mcp/hoist/jsontext"
)

// Initialized is what the server says of itself in its answer to
// initialize, or to server/discover in the stateless era.
type Initialized struct {
	// ProtocolVersion is the version initialize agreed on; "" for
	// server/discover, which names the versions the server speaks in
	// SupportedVersions instead.
	ProtocolVersion   string
	SupportedVersions []string
	// ServerInfo is serverInfo, raw; ServerName its name. server/discover
	// carries it in its result's _meta.
	ServerInfo   json.RawMessage
	ServerName   string
	Instructions string
}

// ReadInitialized reads an initialize result or a server/discover result.
func ReadInitialized(result []byte) Initialized {
	var in Initialized
	read(result, member{"protocolVersion", &in.ProtocolVersion}, member{"instructions", &in.Instructions},
		member{"serverInfo", func(v []byte) {
			if jsontext.Kind(v) == '{' {
				in.ServerInfo = json.RawMessage(v)
				read(v, member{"name", &in.ServerName})
			}
		}},
		member{"supportedVersions", func(v []byte) {
			in.SupportedVersions = in.SupportedVersions[:0]
			for el := range jsontext.Elements(v) {
				if s := str(el); s != "" {
					in.SupportedVersions = append(in.SupportedVersions, s)
				}
			}
		}})
	if in.ServerInfo == nil {
		in.ServerInfo, in.ServerName = ResultServerInfo(result)
	}
	return in
}

// Initialize is what the host says of itself in its initialize request.
type Initialize struct {
	ProtocolVersion string
	// ClientName is clientInfo.name: the MCP client, not the model.
	ClientName string
}

// ReadInitialize reads an initialize request's params.
func ReadInitialize(params []byte) Initialize {
	var in Initialize
	read(params, member{"protocolVersion", &in.ProtocolVersion},
		member{"clientInfo", func(v []byte) { read(v, member{"name", &in.ClientName}) }})
	return in
}
