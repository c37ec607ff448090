// Package redact writes a pseudonymized copy of a directory of session logs
// and their sidecars, for sharing (hoist-mcp manual, "Privacy"; issue 6,
// point 5): every value that came from a person or a tool (arguments,
// results, the conversation) is replaced by a pseudonym of the same shape,
// and the same value by the same pseudonym in every file, so hoist learn
// learns the same flow from the copy. Tool and argument names, JSON keys and
// structure, methods, JSON-RPC ids, times and the servers' tools/list are
// kept. See Pseudonymizer for the map.
package redact

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/hoist-mcp/hoist/internal/atomicfile"
	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// ManifestName and KeyName are the files Dir writes beside the copy.
const (
	ManifestName = "redact-manifest.json"
	KeyName      = "redact.key"
)

// Manifest says what Dir did: the files it wrote and skipped, and how many
// values of each kind it replaced. It holds no value and no key.
type Manifest struct {
	Version int `json:"hoist_redact"`
	// Scheme names the map (see Pseudonymizer).
	Scheme string `json:"scheme"`
	// Key says where the key came from: "key-file" or "generated" (then
	// written to redact.key in the output, which must not be shared).
	Key string `json:"key"`
	// Files counts the files written by what they are: session, context,
	// flow, meta.
	Files map[string]int `json:"files"`
	// Skipped are the files not copied, relative, with why.
	Skipped []Skipped `json:"skipped"`
	// Replaced counts the values replaced (some run of them mapped), by
	// kind (see Kind): the same for any key.
	Replaced map[string]int `json:"replaced"`
	// Kept lists what was copied as it was.
	Kept []string `json:"kept"`
	// KeptWords are the words of tool and argument names kept inside values
	// besides the built-in vocabulary.
	KeptWords []string `json:"kept_words"`
	// Bytes are the bytes read from the input's copied files.
	Bytes int64 `json:"bytes"`
	// Torn counts session logs whose torn last line was left out.
	Torn int `json:"torn,omitempty"`
}

// Skipped is a file Dir did not copy.
type Skipped struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// Scheme is the Manifest's Scheme.
const Scheme = "hmac-sha256-feistel-fpe/1: letter and digit runs mapped by a keyed permutation of the same length and class; case, punctuation and separators kept"

var keptParts = []string{
	"session-log headers (session, times, domain, agent model, host session; of the server command its program, flags and the package a launcher runs; of an upstream URL its scheme)",
	"t_ms and from of every line",
	"JSON keys, structure and whitespace",
	"JSON-RPC methods and ids",
	"tool names in tools/call",
	"initialize and tools/list messages (the servers' own descriptions)",
	"booleans and nulls",
	".meta.json sidecars (task id, reward, model, domain, trial, simulation id)",
	"flow-log labels, probabilities, binding references and run sites other than lookups",
}

// Options configures Dir.
type Options struct {
	// Key is the HMAC key, at least MinKeyBytes. Nil: a random key is drawn
	// and written to KeyName in the output (mode 0600).
	Key []byte
	// Workers is how many files are copied at once; 0 means GOMAXPROCS.
	// Each has a Pseudonymizer of its own: the map is a function of the key
	// alone, so the copy is the same whatever their number.
	Workers int
}

// ErrOutExists is returned when the output directory exists and is not
// empty.
var ErrOutExists = errors.New("the output directory exists and is not empty")

// Dir writes the pseudonymized copy of the session logs under in (recursively)
// to out, with the same relative paths, and a manifest. The copy is written
// into a temporary directory beside out and renamed into place, so out
// either does not exist or is whole. out must not exist, or be empty.
func Dir(ctx context.Context, in, out string, opt Options) (*Manifest, error) {
	if fi, err := os.Stat(in); err != nil {
		return nil, fmt.Errorf("reading sessions: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("reading sessions: %s is not a directory", in)
	}
	if fi, err := os.Lstat(out); err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("%s: exists and is not a directory", out)
	}
	if ents, err := os.ReadDir(out); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("%s: %w", out, ErrOutExists)
	}
	m := &Manifest{Version: 1, Scheme: Scheme, Key: "key-file", Files: map[string]int{}, Skipped: []Skipped{}, Replaced: map[string]int{}, Kept: keptParts}
	key := opt.Key
	if key == nil {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("drawing a key: %w", err)
		}
		m.Key = "generated"
	} else if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("the key has %d bytes: want at least %d", len(key), MinKeyBytes)
	}

	files, err := scan(in, m)
	if err != nil {
		return nil, err
	}
	files, words, err := vocabulary(ctx, files, m)
	if err != nil {
		return nil, err
	}
	m.KeptWords = words

	err = atomicfile.WriteDir(out, 0o700, func(tmp string) error {
		if err := copyAll(ctx, tmp, files, key, words, opt.Workers, m); err != nil {
			return err
		}
		if m.Key == "generated" {
			if _, err := writeFile(filepath.Join(tmp, KeyName), nil, func(bw *bufio.Writer) (int64, error) {
				_, err := bw.WriteString(hex.EncodeToString(key) + "\n")
				return 0, err
			}); err != nil {
				return err
			}
		}
		mj, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return err
		}
		_, err = writeFile(filepath.Join(tmp, ManifestName), nil, func(bw *bufio.Writer) (int64, error) {
			_, err := bw.Write(append(mj, '\n'))
			return 0, err
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// ReadKey reads a key file: the key as hex (as Dir writes it), or else the
// file's bytes, without surrounding space.
func ReadKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading key: %w", err)
	}
	b = bytes.TrimSpace(b)
	if k, err := hex.DecodeString(string(b)); err == nil && len(k) >= MinKeyBytes {
		return k, nil
	}
	if len(b) < MinKeyBytes {
		return nil, fmt.Errorf("%s: the key has %d bytes: want at least %d", path, len(b), MinKeyBytes)
	}
	return b, nil
}

// copyAll copies files into tmp on workers goroutines and adds what they
// did to m. It returns when every worker has.
func copyAll(ctx context.Context, tmp string, files []file, key []byte, words []string, workers int, m *Manifest) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, len(files)))
	type part struct {
		replaced map[string]int
		files    map[string]int
		bytes    int64
		torn     int
		err      error
	}
	parts := make([]part, workers)
	next := make(chan file)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i := range parts {
		pt := &parts[i]
		pt.replaced, pt.files = map[string]int{}, map[string]int{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &rewriter{p: NewPseudonymizer(key, words), count: func(kind string) { pt.replaced[kind]++ }}
			// Buffers are the worker's, reused file after file: most logs
			// are small, and a buffer per file would cost more than the file.
			bw := bufio.NewWriterSize(nil, 64<<10)
			for f := range next {
				if pt.err != nil {
					continue
				}
				dst := filepath.Join(tmp, f.rel)
				if f.kind == fileSession {
					dst = strings.TrimSuffix(dst, ".zst")
				}
				if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
					pt.err = err
					cancel()
					continue
				}
				n, err := writeFile(dst, bw, func(bw *bufio.Writer) (int64, error) { return copyFile(w, f, bw, &pt.torn) })
				if err != nil {
					pt.err = err
					cancel()
					continue
				}
				pt.bytes += n
				pt.files[f.kind]++
			}
		}()
	}
feed:
	for _, f := range files {
		select {
		case next <- f:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	var errs []error
	for _, pt := range parts {
		errs = append(errs, pt.err)
		for k, n := range pt.replaced {
			m.Replaced[k] += n
		}
		for k, n := range pt.files {
			m.Files[k] += n
		}
		m.Bytes += pt.bytes
		m.Torn += pt.torn
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return ctx.Err()
}

// What a file is.
const (
	fileSession = "session"
	fileContext = "context"
	fileFlow    = "flow"
	fileMeta    = "meta"
)

type file struct {
	path, rel, kind string
}

// scan lists the files to copy, sorted, and notes the others as skipped.
func scan(in string, m *Manifest) ([]file, error) {
	var files []file
	err := filepath.WalkDir(in, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(in, p)
		name := d.Name()
		kind := ""
		switch {
		case strings.HasSuffix(name, ".context.jsonl"):
			kind = fileContext
		case strings.HasSuffix(name, ".flow.jsonl"):
			kind = fileFlow
		case strings.HasSuffix(name, ".meta.json"):
			kind = fileMeta
		case strings.HasSuffix(name, ".confirm.jsonl"):
			m.Skipped = append(m.Skipped, Skipped{rel, "confirm logs are not redacted"})
			return nil
		case strings.HasSuffix(name, ".jsonl"), strings.HasSuffix(name, ".jsonl.zst"):
			kind = fileSession
		default:
			m.Skipped = append(m.Skipped, Skipped{rel, "not a session log or a sidecar"})
			return nil
		}
		files = append(files, file{p, rel, kind})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading sessions: %w", err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	return files, nil
}

// vocabulary returns the words of the tool and argument names the servers
// listed, lowercase and sorted: such words are names of things, not of
// people, and an id that starts with one keeps it (user_15 → user_83). It
// also drops the files named session logs that are not, noting them as
// skipped. Lines are looked at only when they list tools.
func vocabulary(ctx context.Context, files []file, m *Manifest) ([]file, []string, error) {
	words := map[string]bool{}
	add := func(name string) {
		for _, w := range strings.FieldsFunc(name, func(r rune) bool { return !unicode.IsLetter(r) }) {
			words[strings.ToLower(w)] = true
		}
	}
	kept := files[:0]
	for _, f := range files {
		if f.kind != fileSession {
			kept = append(kept, f)
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		r, err := mcplog.Open(f.path)
		if errors.Is(err, mcplog.ErrNotSessionLog) {
			m.Skipped = append(m.Skipped, Skipped{f.rel, "not a session log"})
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		r.Close()
		kept = append(kept, f)
		if err := eachToolsList(f.path, func(line []byte) {
			if !jsontext.Valid(line) {
				return
			}
			msg, _ := jsontext.Lookup(line, "message")
			result, _ := jsontext.Lookup(msg, "result")
			tools, _ := mcpmsg.ReadTools(result)
			for _, t := range tools {
				add(t.Name)
				props, _ := jsontext.Lookup(t.InputSchema, "properties")
				for p := range jsontext.Members(props) {
					add(string(p))
				}
			}
		}); err != nil {
			return nil, nil, err
		}
	}
	out := make([]string, 0, len(words))
	for w := range words {
		out = append(out, w)
	}
	sort.Strings(out)
	return kept, out, nil
}

// eachToolsList calls fn with each line of the log at path that lists
// tools, found without parsing the others.
func eachToolsList(path string, fn func(line []byte)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var rd io.Reader = f
	if strings.HasSuffix(path, ".zst") {
		r, err := mcplog.Open(path)
		if err != nil {
			return err
		}
		defer r.Close()
		for {
			e, err := r.Next()
			if err == io.EOF {
				return nil
			}
			if err != nil && e.Bad == nil {
				return err
			}
			if bytes.Contains(e.Message, []byte(`"inputSchema"`)) {
				fn([]byte(`{"message":` + string(e.Message) + `}`))
			}
		}
	}
	br := bufio.NewReaderSize(rd, 32<<10)
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A long line: read it whole.
			rest, err2 := br.ReadBytes('\n')
			line = append(append([]byte(nil), line...), rest...)
			err = err2
		}
		if bytes.Contains(line, []byte(`"inputSchema"`)) && bytes.Contains(line, []byte(`"tools"`)) {
			fn(line)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// writeFile writes a new file of the copy at path (mode 0600), which fill
// writes through bw (nil: a new buffer), synced (atomicfile.WriteNew: the
// copy's directory is swapped in whole, so its files need no rename).
func writeFile(path string, bw *bufio.Writer, fill func(*bufio.Writer) (int64, error)) (int64, error) {
	var n int64
	err := atomicfile.WriteNew(path, 0o600, func(w io.Writer) error {
		if bw == nil {
			bw = bufio.NewWriterSize(w, 64<<10)
		}
		bw.Reset(w)
		var err error
		if n, err = fill(bw); err != nil {
			return err
		}
		return bw.Flush()
	})
	if err != nil {
		return n, fmt.Errorf("writing %s: %w", path, err)
	}
	return n, nil
}

func copyFile(w *rewriter, f file, bw *bufio.Writer, torn *int) (int64, error) {
	switch f.kind {
	case fileSession:
		return copySession(w, f, bw, torn)
	case fileMeta:
		b, err := os.ReadFile(f.path)
		if err != nil {
			return 0, err
		}
		_, err = bw.Write(b)
		return int64(len(b)), err
	}
	rule := contextRule
	if f.kind == fileFlow {
		rule = flowLogRule
	}
	in, err := os.Open(f.path)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	br := bufio.NewReaderSize(in, 32<<10)
	var n int64
	var buf []byte
	for {
		line, err := br.ReadBytes('\n')
		n += int64(len(line))
		if len(line) > 0 {
			l := bytes.TrimRight(line, "\r\n")
			buf = buf[:0]
			switch {
			case len(bytes.TrimSpace(l)) == 0:
				buf = append(buf, l...)
			case jsontext.Valid(l):
				buf = w.value(buf, l, rule)
			default:
				buf = append(buf, w.p.String(string(l))...)
			}
			buf = append(buf, '\n')
			if _, werr := bw.Write(buf); werr != nil {
				return n, werr
			}
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

func copySession(w *rewriter, f file, bw *bufio.Writer, torn *int) (int64, error) {
	r, err := mcplog.Open(f.path)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	hr := r.HeaderRaw()
	n := int64(len(hr) + 1)
	bw.Write(w.header(nil, hr))
	bw.WriteByte('\n')
	var buf []byte
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil && e.Bad == nil {
			return n, err
		}
		if e.Bad != nil {
			// A line that is not an entry is copied as raw text, redacted
			// whole: its values cannot be told apart, so none is kept.
			e.Raw, e.From = e.Bad.Text, cmp.Or(e.From, mcplog.FromServer)
			e.Bad = nil
		}
		buf = append(buf[:0], `{"t_ms":`...)
		buf = strconv.AppendInt(buf, e.TMS, 10)
		buf = append(buf, `,"from":`...)
		buf = jsontext.AppendString(buf, e.From, jsontext.Plain)
		if e.IsRaw() {
			n += int64(len(e.Raw))
			buf = append(buf, `,"raw":`...)
			ps, mapped := w.p.Mapped(e.Raw)
			if mapped {
				w.count(KindText)
			}
			buf = jsontext.AppendString(buf, ps, jsontext.Plain)
		} else {
			n += int64(len(e.Message))
			buf = append(buf, `,"message":`...)
			buf = w.message(buf, e.From, e.Message)
		}
		keys := make([]string, 0, len(e.Extra))
		for k := range e.Extra {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			buf = append(buf, ',')
			buf = jsontext.AppendString(buf, k, jsontext.Plain)
			buf = append(buf, ':')
			buf = w.value(buf, e.Extra[k], deepRule)
		}
		buf = append(buf, "}\n"...)
		if _, err := bw.Write(buf); err != nil {
			return n, err
		}
	}
	if r.Torn() {
		*torn++
	}
	return n, nil
}

// message rewrites one logged message by who sent it and what it is.
func (w *rewriter) message(dst []byte, from string, msg []byte) []byte {
	if from == mcplog.FromContext {
		return w.value(dst, msg, contextRule)
	}
	if jsontext.Kind(msg) == '[' {
		dst = append(dst, '[')
		first := true
		for el := range jsontext.Elements(msg) {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = w.value(dst, el, messageRule(el))
		}
		return append(dst, ']')
	}
	return w.value(dst, msg, messageRule(msg))
}

// header rewrites a session log's header: the server command's arguments
// and the upstream URL are values like any other (a directory given to a
// filesystem server is the same path its calls name), so they get the same
// pseudonyms; the program, its flags, the package a launcher runs and the
// URL's scheme are kept, and so is every other member.
func (w *rewriter) header(dst, h []byte) []byte {
	prev := 0
	for key, val := range jsontext.RawMembers(h) {
		var out []byte
		switch jsontext.Unquote(key) {
		case "server_command":
			if jsontext.Kind(val) != '[' {
				continue
			}
			var args []string
			for el := range jsontext.Elements(val) {
				if el[0] != '"' {
					args = nil
					break
				}
				args = append(args, jsontext.Unquote(el))
			}
			out = []byte{'['}
			for i, a := range redactCommand(w, args) {
				if i > 0 {
					out = append(out, ',')
				}
				out = jsontext.AppendString(out, a, jsontext.Plain)
			}
			out = append(out, ']')
		case "upstream":
			if val[0] != '"' {
				continue
			}
			out = jsontext.AppendString(nil, w.url(jsontext.Unquote(val)), jsontext.Plain)
		default:
			continue
		}
		vs := jsontext.Offset(h, val)
		dst = append(dst, h[prev:vs]...)
		dst = append(dst, out...)
		prev = vs + len(val)
	}
	return append(dst, h[prev:]...)
}

// launchers run the package named after their flags: that name is the
// server, kept as the program is.
var launchers = map[string]bool{"npx": true, "uvx": true, "bunx": true, "pipx": true}

// redactCommand redacts a server command's arguments (see header).
func redactCommand(w *rewriter, args []string) []string {
	out := make([]string, len(args))
	keepNext := false
	for i, a := range args {
		switch {
		case i == 0:
			out[i] = a
			keepNext = launchers[filepath.Base(a)]
			continue
		case a == mcplog.Redacted || strings.HasPrefix(a, "-") && !strings.Contains(a, "="):
			out[i] = a // a flag, or what was scrubbed already
			continue
		case keepNext:
			out[i], keepNext = a, false // the package a launcher runs
			continue
		}
		if name, value, ok := strings.Cut(a, "="); ok && (strings.HasPrefix(name, "-") || envName(name)) {
			out[i] = name + "=" + w.value1(value)
			continue
		}
		out[i] = w.value1(a)
	}
	return out
}

// envName reports whether s is an environment variable's name.
func envName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// value1 is the pseudonym of one value, counted in the manifest.
func (w *rewriter) value1(s string) string {
	ps, mapped := w.p.Mapped(s)
	if mapped {
		w.count(Kind(s))
	}
	return ps
}

// url redacts a URL but for its scheme.
func (w *rewriter) url(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return w.value1(u)
	}
	return scheme + "://" + w.value1(rest)
}
