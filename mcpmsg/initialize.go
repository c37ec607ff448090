package mcpmsg

import (
	"encoding/json"

	"github.com/hoist-mcp/hoist/jsontext"
)

// Initialized is what the server says of itself in its answer to
// initialize.
type Initialized struct {
	ProtocolVersion string
	// ServerInfo is serverInfo, raw; ServerName its name.
	ServerInfo   json.RawMessage
	ServerName   string
	Instructions string
}

// ReadInitialized reads an initialize result.
func ReadInitialized(result []byte) Initialized {
	var in Initialized
	read(result, member{"protocolVersion", &in.ProtocolVersion}, member{"instructions", &in.Instructions},
		member{"serverInfo", func(v []byte) {
			if jsontext.Kind(v) == '{' {
				in.ServerInfo = json.RawMessage(v)
				read(v, member{"name", &in.ServerName})
			}
		}})
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
