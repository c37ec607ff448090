package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hoist-mcp/hoist/internal/atomicfile"
	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/oracle"
)

// cacheFormat is the version of an entry's shape, its first member.
const cacheFormat = "1"

// maxEntry bounds an entry's file: a real one is about 250 bytes.
const maxEntry = 64 << 10

// Cache keeps the model's answers in a directory (--oracle-cache), one
// file per question, named by the question's key: DIR/ab/abcd….json. The
// directory is made 0700 and each entry 0600, written whole or not at all
// (internal/atomicfile), so several processes may share one directory (two
// proxies and hoist confirm): a reader sees an entry whole or not at all,
// and two writers of one key each leave a whole entry, the last one
// standing. An entry holds the answer, not the question's text.
//
// An entry that cannot be read (not JSON, a field of the wrong kind, the
// wrong key) is a miss, with one warning per entry; the next answer to its
// question replaces it. A Cache is safe for concurrent use; a nil *Cache
// holds nothing and keeps nothing.
type Cache struct {
	dir    string
	warn   func(string)
	warned sync.Map // entry path → struct{}: warned about already
}

// Entry is one cached answer.
type Entry struct {
	Key     string        // the question's key (Key)
	Model   string        // the model that answered
	Prompt  string        // the question's prompt version (oracle.Question.Version)
	PYes    float64       // P(yes), from 0 to 1
	From    oracle.Source // how PYes was read
	Word    string        // the answer's first word, "yes" or "no" ("" when the top token was neither)
	Created time.Time
}

// DefaultCacheDir returns --oracle-cache's default, ~/.hoist/oracle-cache.
func DefaultCacheDir() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the oracle cache's default directory: %w", err)
	}
	return filepath.Join(home, ".hoist", "oracle-cache"), nil
}

// OpenCache opens the cache in dir, creating it (and its parents) with mode
// 0700 when it is missing; a directory that exists keeps its mode. warn
// receives the warnings about unreadable entries; nil drops them.
func OpenCache(dir string, warn func(string)) (*Cache, error) {
	if dir == "" {
		return nil, errors.New("opening the oracle cache: no directory given")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the oracle cache: %w", err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the oracle cache: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("opening the oracle cache: %s is not a directory", dir)
	}
	if warn == nil {
		warn = func(string) {}
	}
	return &Cache{dir: dir, warn: warn}, nil
}

// Dir returns the cache's directory.
func (c *Cache) Dir() string {
	if c == nil {
		return ""
	}
	return c.dir
}

// path returns the entry file of key.
func (c *Cache) path(key string) string {
	return filepath.Join(c.dir, key[:2], key+".json")
}

// isKey reports whether s is a key: 64 lowercase hex digits. Anything else
// names no file, so a key cannot reach outside the directory.
func isKey(s string) bool { return len(s) == 64 && isHex(s) }

// isHex reports whether s is lowercase hex digits.
func isHex(s string) bool {
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Get returns the entry of key, and whether there is one that can be read.
func (c *Cache) Get(key string) (Entry, bool) {
	if c == nil || !isKey(key) {
		return Entry{}, false
	}
	p := c.path(key)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Entry{}, false
	}
	if err != nil {
		c.warnOnce(p, err.Error())
		return Entry{}, false
	}
	b, err := io.ReadAll(io.LimitReader(f, maxEntry+1))
	f.Close()
	if err != nil {
		c.warnOnce(p, err.Error())
		return Entry{}, false
	}
	e, err := decodeEntry(b)
	if err == nil && e.Key != key {
		err = fmt.Errorf("key: the entry is %q's, not its file name's", e.Key)
	}
	if err != nil {
		c.warnOnce(p, err.Error())
		return Entry{}, false
	}
	return e, true
}

func (c *Cache) warnOnce(path, msg string) {
	if _, seen := c.warned.LoadOrStore(path, struct{}{}); !seen {
		c.warn(fmt.Sprintf("oracle cache: %s: %s; read as a miss", path, msg))
	}
}

// Answer is Get as an oracle.Answer, Cached: the cache is the
// oracle.Answers that flow.Reanswer reads.
func (c *Cache) Answer(key string) (oracle.Answer, bool) {
	e, ok := c.Get(key)
	if !ok {
		return oracle.Answer{}, false
	}
	return oracle.Answer{Key: key, Answered: true, PYes: e.PYes, From: e.From, Cached: true}, true
}

// Put writes e, replacing the entry of its key, atomically.
func (c *Cache) Put(e Entry) error {
	if c == nil {
		return nil
	}
	if !isKey(e.Key) {
		return fmt.Errorf("caching an answer: %q is not a key", e.Key)
	}
	if !(e.PYes >= 0 && e.PYes <= 1) {
		return fmt.Errorf("caching an answer: p_yes %v is not from 0 to 1", e.PYes)
	}
	p := c.path(e.Key)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("caching an answer: %w", err)
	}
	return atomicfile.WriteFile(p, encodeEntry(e), 0o600)
}

// encodeEntry writes an entry as one line of canonical JSON (jsontext).
func encodeEntry(e Entry) []byte {
	tree := map[string]any{
		"hoist_oracle_cache": json.Number(cacheFormat),
		"key":                e.Key,
		"model":              e.Model,
		"prompt":             e.Prompt,
		"p_yes":              json.Number(strconv.FormatFloat(e.PYes, 'g', -1, 64)),
		"from":               string(e.From),
		"word":               e.Word,
		"created_unix_ms":    json.Number(strconv.FormatInt(e.Created.UnixMilli(), 10)),
	}
	return append(jsontext.AppendValue(nil, tree, jsontext.HTML), '\n')
}

// decodeEntry reads an entry; an error names the member that is wrong.
func decodeEntry(b []byte) (Entry, error) {
	if len(b) > maxEntry {
		return Entry{}, fmt.Errorf("larger than %d bytes", maxEntry)
	}
	if !jsontext.Valid(b) || jsontext.Kind(b) != '{' {
		return Entry{}, errors.New("not a JSON object")
	}
	var e Entry
	str := func(name string, dst *string) error {
		v, ok := jsontext.Lookup(b, name)
		if !ok || jsontext.Kind(v) != '"' {
			return fmt.Errorf("%s: want a string", name)
		}
		*dst = jsontext.Unquote(v)
		return nil
	}
	num := func(name string) (string, error) {
		v, ok := jsontext.Lookup(b, name)
		if !ok || !isNumber(v) {
			return "", fmt.Errorf("%s: want a number", name)
		}
		return string(v), nil
	}
	format, err := num("hoist_oracle_cache")
	if err != nil {
		return Entry{}, err
	}
	if format != cacheFormat {
		return Entry{}, fmt.Errorf("hoist_oracle_cache: version %s, want %s", format, cacheFormat)
	}
	var from string
	for _, f := range []struct {
		name string
		dst  *string
	}{{"key", &e.Key}, {"model", &e.Model}, {"prompt", &e.Prompt}, {"from", &from}, {"word", &e.Word}} {
		if err := str(f.name, f.dst); err != nil {
			return Entry{}, err
		}
	}
	e.From = oracle.Source(from)
	p, err := num("p_yes")
	if err != nil {
		return Entry{}, err
	}
	e.PYes, err = strconv.ParseFloat(p, 64)
	if err != nil || !(e.PYes >= 0 && e.PYes <= 1) || math.IsNaN(e.PYes) {
		return Entry{}, fmt.Errorf("p_yes: want a number from 0 to 1, got %s", p)
	}
	ms, err := num("created_unix_ms")
	if err != nil {
		return Entry{}, err
	}
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return Entry{}, fmt.Errorf("created_unix_ms: want an integer, got %s", ms)
	}
	e.Created = time.UnixMilli(n)
	return e, nil
}

// isNumber reports whether a valid JSON value is a number.
func isNumber(v []byte) bool {
	k := jsontext.Kind(v)
	return k == '-' || k >= '0' && k <= '9'
}

// Prune deletes the entries last written before before (--retain-days),
// and the temporary files of writes that never finished, and returns how
// many files it deleted. Other files are left alone, and so are the shard
// directories, which a writer in another process may be about to use.
func (c *Cache) Prune(before time.Time) (int, error) {
	if c == nil {
		return 0, nil
	}
	shards, err := os.ReadDir(c.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("pruning the oracle cache: %w", err)
	}
	n := 0
	var errs []error
	for _, s := range shards {
		if !s.IsDir() || len(s.Name()) != 2 || !isHex(s.Name()) {
			continue
		}
		dir := filepath.Join(c.dir, s.Name())
		files, err := os.ReadDir(dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("pruning the oracle cache: %w", err))
			continue
		}
		for _, f := range files {
			if !f.Type().IsRegular() || !ours(f.Name()) {
				continue
			}
			info, err := f.Info()
			if err != nil || !info.ModTime().Before(before) {
				continue
			}
			switch err := os.Remove(filepath.Join(dir, f.Name())); {
			case err == nil:
				n++
			case !errors.Is(err, fs.ErrNotExist): // another process pruned it first
				errs = append(errs, fmt.Errorf("pruning the oracle cache: %w", err))
			}
		}
	}
	return n, errors.Join(errs...)
}

// ours reports whether a shard's file is the cache's: an entry, or the
// temporary file of an entry's write (atomicfile names it
// .<name>.tmp-<random>).
func ours(name string) bool {
	if k, ok := strings.CutSuffix(name, ".json"); ok && isKey(k) {
		return true
	}
	if rest, ok := strings.CutPrefix(name, "."); ok {
		if i := strings.Index(rest, ".json.tmp-"); i >= 0 && isKey(rest[:i]) {
			return true
		}
	}
	return false
}
