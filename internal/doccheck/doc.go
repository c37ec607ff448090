// Package doccheck holds the test that keeps the repository's documents
// standing on their own: every relative link in a Markdown file leads to a
// file of the repository (and a #fragment to a heading of it), and every
// docs/NAME.md that a document or a Go comment cites exists, with the
// numbered sections (§N, §N.M) the citation names. A clone has nothing
// beside the checkout, so nothing may point outside it.
//
// It has no code of its own: the test is the package.
package doccheck
