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
	for k, v := range jsontext.Members(result) {
		switch string(k) {
		case "protocolVersion":
			in.ProtocolVersion = str(v)
		case "instructions":
			in.Instructions = str(v)
		case "serverInfo":
			if jsontext.Kind(v) == '{' {
				in.ServerInfo = json.RawMessage(v)
				n, _ := jsontext.Lookup(v, "name")
				in.ServerName = str(n)
			}
		}
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
	for k, v := range jsontext.Members(params) {
		switch string(k) {
		case "protocolVersion":
			in.ProtocolVersion = str(v)
		case "clientInfo":
			n, _ := jsontext.Lookup(v, "name")
			in.ClientName = str(n)
		}
	}
	return in
}
