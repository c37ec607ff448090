package doccheck

import (
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the module's root: tests run in their package's directory.
const root = "../.."

// skipDir reports whether a directory holds nothing of ours: the npm peers,
// version control, caches.
func skipDir(rel string, name string) bool {
	return name == "node_modules" || name == ".git" || rel == "testdata/fuzz-cache" || rel == "bin"
}

// files returns the repository's files (slash-separated, relative to root)
// whose names end in one of exts.
func files(t *testing.T, exts ...string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && skipDir(rel, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if slices.ContainsFunc(exts, func(e string) bool { return strings.HasSuffix(rel, e) }) {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no %v files under %s", exts, root)
	}
	return out
}

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func exists(rel string) bool {
	_, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel)))
	return err == nil
}

// line is one line of a Markdown file outside fenced code blocks, with its
// inline code spans blanked out, so that an example is not taken for a
// link.
type line struct {
	n    int
	text string
}

var codeSpan = regexp.MustCompile("`+[^`]*`+")

func prose(doc string) []line {
	var out []line
	fence := ""
	for i, l := range strings.Split(doc, "\n") {
		trimmed := strings.TrimLeft(l, " ")
		if fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")) {
			fence = trimmed[:3]
			continue
		}
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		out = append(out, line{i + 1, codeSpan.ReplaceAllStringFunc(l, func(s string) string { return strings.Repeat(" ", len(s)) })})
	}
	return out
}

// slug is the fragment GitHub gives a heading: lower case, punctuation
// dropped (letters, digits, '-' and '_' kept), spaces as '-'.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var headingRE = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)

// headings returns a Markdown file's headings in order, as written but for
// the backquotes of code spans.
func headings(doc string) []string {
	var out []string
	for _, l := range prose(codeSpanText(doc)) {
		if m := headingRE.FindStringSubmatch(l.text); m != nil {
			out = append(out, m[2])
		}
	}
	return out
}

// anchors returns the fragments of a file's headings, the second and later
// of one name suffixed -1, -2, … as GitHub does.
func anchors(doc string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, h := range headings(doc) {
		s := slug(h)
		if k := seen[s]; k > 0 {
			out[s+"-"+strconv.Itoa(k)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// codeSpanText keeps the text of code spans in headings, which GitHub
// slugs, by dropping their backquotes before prose blanks the spans.
func codeSpanText(doc string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(doc, "\n") {
		if strings.HasPrefix(l, "#") {
			l = strings.ReplaceAll(l, "`", "")
		}
		b.WriteString(l)
	}
	return b.String()
}

var (
	// inline links [text](target "title") and images; reference
	// definitions [label]: target.
	inlineLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refLink    = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// TestMarkdownLinks: every relative link in the repository's Markdown leads
// to a file or directory of the repository, and a #fragment of a Markdown
// target to one of its headings.
func TestMarkdownLinks(t *testing.T) {
	docs := map[string]string{}
	for _, f := range files(t, ".md") {
		docs[f] = read(t, f)
	}
	checked := 0
	for _, f := range sortedKeys(docs) {
		for _, l := range prose(docs[f]) {
			var targets []string
			for _, m := range inlineLink.FindAllStringSubmatch(l.text, -1) {
				targets = append(targets, m[1])
			}
			if m := refLink.FindStringSubmatch(l.text); m != nil {
				targets = append(targets, m[1])
			}
			for _, target := range targets {
				if scheme.MatchString(target) || strings.HasPrefix(target, "//") {
					continue // another site's page: not ours to check
				}
				checked++
				file, frag, _ := strings.Cut(target, "#")
				rel := f
				if file != "" {
					rel = path.Clean(path.Join(path.Dir(f), file))
				}
				switch {
				case strings.HasPrefix(rel, "../") || rel == "..":
					t.Errorf("%s:%d: link %q leads outside the repository", f, l.n, target)
					continue
				case !exists(rel):
					t.Errorf("%s:%d: link %q: %s does not exist", f, l.n, target, rel)
					continue
				}
				if frag == "" || !strings.HasSuffix(rel, ".md") {
					continue
				}
				doc, ok := docs[rel]
				if !ok {
					doc = read(t, rel)
				}
				if !anchors(doc)[frag] {
					t.Errorf("%s:%d: link %q: %s has no heading #%s", f, l.n, target, rel, frag)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: the scan is broken")
	}
}

var (
	// A citation of a document of docs/: docs/NAME.md, or in Go a bare
	// NAME.md before a section sign (mcp-wire.md §2), then the sections it
	// names: §6, §8.2, §2–§7.
	citation = regexp.MustCompile(`(docs/[A-Za-z0-9_.-]+\.md|\b[A-Za-z0-9_-]+\.md(?:\s*§))`)
	sections = regexp.MustCompile(`^(?:\s*§\d+(?:\.\d+)*(?:\s*[–-]\s*§\d+(?:\.\d+)*)?)?`)
	section  = regexp.MustCompile(`§(\d+(?:\.\d+)*)`)
	// A section cited by name: docs/flow.md, "How a flow is served".
	named = regexp.MustCompile(`^,?\s*"([^"]+)"`)
	// A numbered heading: "6. Propensities", "8.2 The bootstrap".
	numbered = regexp.MustCompile(`^(\d+(?:\.\d+)*)\.?(?:\s|$)`)
)

// self is this package's directory, whose files name citations as
// patterns.
const self = "internal/doccheck/"

// TestCitations: every docs/NAME.md that a document or a Go file cites
// exists, every section it cites by number (docs/ope.md §6, §2–§7) is a
// numbered heading of that document, and every section it cites by name
// (docs/flow.md, "How a flow is served") one of its headings.
func TestCitations(t *testing.T) {
	numbers := map[string]map[string]bool{} // doc → its section numbers
	numbersOf := func(rel string) map[string]bool {
		if s, ok := numbers[rel]; ok {
			return s
		}
		s := map[string]bool{}
		for _, h := range headings(read(t, rel)) {
			if m := numbered.FindStringSubmatch(h); m != nil {
				s[m[1]] = true
			}
		}
		numbers[rel] = s
		return s
	}
	cited := 0
	for _, f := range files(t, ".md", ".go") {
		if strings.HasPrefix(f, self) {
			continue
		}
		for n, l := range strings.Split(read(t, f), "\n") {
			for _, m := range citation.FindAllStringIndex(l, -1) {
				ref := l[m[0]:m[1]]
				rel := strings.TrimRight(ref, " §")
				if !strings.HasPrefix(rel, "docs/") {
					if strings.HasSuffix(f, ".md") {
						continue // in a document, a bare NAME.md is a file beside it
					}
					rel = "docs/" + rel
				}
				cited++
				if !exists(rel) {
					t.Errorf("%s:%d: cites %s, which does not exist", f, n+1, rel)
					continue
				}
				rest := l[m[0]+len(strings.TrimRight(ref, " §")):]
				for _, s := range section.FindAllStringSubmatch(sections.FindString(rest), -1) {
					if !numbersOf(rel)[s[1]] {
						t.Errorf("%s:%d: cites %s §%s, but no heading of it is numbered %s", f, n+1, rel, s[1], s[1])
					}
				}
				if m := named.FindStringSubmatch(rest); m != nil && !slices.ContainsFunc(headings(read(t, rel)), func(h string) bool {
					return strings.EqualFold(strings.ReplaceAll(h, "`", ""), m[1])
				}) {
					t.Errorf("%s:%d: cites %s, %q, but it has no heading of that name", f, n+1, rel, m[1])
				}
			}
		}
	}
	if cited == 0 {
		t.Fatal("no citation of docs/ found: the scan is broken")
	}
}

// TestSlug: fragments are made as GitHub makes them, so that a link this
// test accepts also works on the page.
func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Log format", "log-format"},
		{"6. Propensities under ε-greedy", "6-propensities-under-ε-greedy"},
		{"hoist-mcp --listen: hosts by URL", "hoist-mcp---listen-hosts-by-url"},
		{"What is *never* logged", "what-is-never-logged"},
	} {
		if got := slug(tc.heading); got != tc.want {
			t.Errorf("slug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
	got := anchors("# A\n\n## A\n\n```\n# not a heading\n```\n### `code` B\n")
	want := map[string]bool{"a": true, "a-1": true, "code-b": true}
	if !maps.Equal(got, want) {
		t.Errorf("anchors = %v, want %v", got, want)
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
