package flow

import _ "embed"

// Schema is the JSON Schema (draft 2020-12) of the flow IR, flow.schema.json:
// for editors and other tools that read flows. Parse checks the same rules
// and more (Validate).
//
//go:embed flow.schema.json
var Schema []byte
