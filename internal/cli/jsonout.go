package cli

import (
	"encoding/json"
	"io"
)

// writeJSON writes a command's --json report: one value, indented by two
// spaces, and a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
