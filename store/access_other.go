//go:build !unix

package store

// writeDenied says why this process may not write path, or "" when it
// may. Without access(2) it cannot tell ahead: SQLite's own error, named
// by ReadOnlyError, tells instead.
func writeDenied(path string) string { return "" }
