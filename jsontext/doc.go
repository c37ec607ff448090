// Package jsontext is hoist's one owner of JSON policy: every package that
// looks inside JSON bytes (the proxy's wire lines, session logs, flow logs,
// tool results, bindings, redaction) reads and writes them through it, so
// that they all agree on what a text means.
//
// The rules, decided once:
//
//   - A JSON text is exactly one value (RFC 8259) in valid UTF-8, with
//     optional whitespace around it, nested at most MaxDepth deep. Valid is
//     the test; a text that fails it is not JSON anywhere in hoist, and
//     Parse refuses exactly the texts Valid refuses.
//   - Member names are compared exactly, byte for byte after unescaping:
//     "ID" is not "id" (encoding/json would match it case-insensitively).
//     That is right for logs and files, and wrong at a security boundary,
//     where what counts is what the receiver executes: there the lenient
//     rules (lenient.go: Fold, LookupFold, OddName, Lenient) read a text as
//     the most lenient common decoder does and name the member that two
//     common decoders read differently.
//   - A name repeated in one object: the last occurrence wins, as
//     encoding/json and JavaScript's JSON.parse decide. Lookup returns the
//     last, Parse keeps the last, and Members yields every occurrence in
//     order, so a caller that keeps state per name also ends on the last.
//   - Numbers are kept as the bytes that were sent (json.Number in a parsed
//     tree): an id of 30 digits survives, and 1.0 is not 1.
//   - Strings decode as encoding/json decodes them: an escaped lone or
//     broken surrogate becomes U+FFFD.
//   - Strings encode in one way, with the HTML escaping of <, > and & as a
//     choice (HTML matches encoding/json.Marshal byte for byte; Plain keeps
//     text readable in logs). Both escape U+2028 and U+2029, which break
//     JavaScript readers, and write invalid UTF-8 as U+FFFD.
//
// The scanners come in two kinds. Members, Elements and Lookup walk bytes
// already known to be valid (checked once, by Valid, where they came in),
// so they check nothing and never fail: each value they hand out aliases
// the input, with its offset from Offset. ScanPrefix is the tolerant one,
// for the first piece of a line that may be cut short or not JSON at all.
package jsontext
