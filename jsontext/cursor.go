package jsontext

// Cursor walks a JSON value that is already known to be valid, one value
// at a time and in one pass: for a reader of a document whose layout it
// knows (an array of arrays, say), where Elements inside Elements would
// scan each inner value twice. Like the scanner it wraps it checks
// nothing; on bytes that are not valid JSON it may panic.
type Cursor struct {
	s scanner
}

// NewCursor returns a cursor at the start of b.
func NewCursor(b []byte) Cursor { return Cursor{s: scanner{b: b}} }

// Enter moves into the array or object (open is '[' or '{') at the cursor,
// and reports whether there is one; when there is not, the cursor stays.
func (c *Cursor) Enter(open byte) bool { return c.s.enter(open) }

// More moves to the next element (or member) of the container the cursor
// is in, past the comma before it, and reports whether there is one. At
// the container's closer (']' or '}') it moves past it and reports false.
func (c *Cursor) More(closer byte) bool {
	if c.s.more(closer) {
		return true
	}
	c.s.i++
	return false
}

// Value returns the exact bytes of the value at the cursor, which alias
// the cursor's bytes, and moves past it.
func (c *Cursor) Value() []byte {
	c.s.space()
	start := c.s.i
	c.s.skipValue()
	return c.s.b[start:c.s.i]
}

// Name returns the token of the member name at the cursor (quotes and
// escapes included: Unquote decodes it) and moves past it and its colon,
// to the member's value.
func (c *Cursor) Name() []byte {
	c.s.space()
	start := c.s.i
	c.s.skipString()
	tok := c.s.b[start:c.s.i]
	c.s.space()
	c.s.i++ // ':'
	return tok
}
