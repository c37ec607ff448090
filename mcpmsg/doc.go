// Package mcpmsg is the meaning of MCP messages, read and written in one
// place: a tool call's name and arguments, a tool result's text, isError
// and structuredContent, the tools a tools/list result lists, initialize's
// serverInfo and instructions, the ids of the proxy's own requests
// (hoist-<n>), and the text item the proxy appends to a result after
// looking things up for the agent, which FormatLookups writes and
// ParseLookups reads. It also knows the protocol's eras (era.go): the
// session era up to 2025-11-25, and the stateless era from 2026-07-28,
// whose requests name their version in _meta, whose results carry a
// resultType, and whose server asks for input by answering
// input_required, after which the client sends the request again with
// inputResponses.
//
// The proxy, the episode builder, hoist-procedure, redact and learn all
// read messages through it, so they cannot disagree on what a line means.
// It works on jsonrpc.Message (one classification of a wire line) and on
// raw members, through jsontext: names compare exactly and a repeated
// member counts as its last occurrence. Readers are lenient about shapes,
// as hosts must be: a member of an unexpected type is left out, and one
// odd tool or content item does not hide the others.
package mcpmsg
