package learn

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/hoist-mcp/hoist/episode"
	"github.com/hoist-mcp/hoist/flow"
)

// Table is the arbiter's training table: the offers of a replay of
// episodes with a flow (ReplayTable), each as its inputs, its label and
// its task's fold, with how many offers were the same. Tables of shards of
// the episodes replayed with the same flow add up (Merge), and the fit
// reads the rows sorted, so that the float sums of the fit, and the
// weights, do not depend on the order or the split of the episodes.
type Table struct {
	of       string // the learned.digest of the flow replayed
	features []string
	episodes int
	digest   [sha256.Size]byte // the sum of the replayed episodes' digests
	rows     map[string]*tableRow
	rates    map[rateKey]*rateAcc // the held-out hit rates (heldout.go)
}

type tableRow struct {
	fold int
	hit  bool
	n    int
	x    []float64
	key  string // rowKey: 0 and -0 differ
}

func newTable(f *flow.Flow, feats []string) *Table {
	return &Table{of: f.Learned.Digest, features: feats, rows: map[string]*tableRow{}}
}

// rowKey is the exact identity of a row: its fold, label and the bits of
// its inputs.
func rowKey(fold int, hit bool, x []float64) string {
	b := make([]byte, 0, 16+17*len(x))
	b = strconv.AppendInt(b, int64(fold), 10)
	b = strconv.AppendBool(b, hit)
	for _, v := range x {
		b = append(b, ' ')
		b = strconv.AppendUint(b, math.Float64bits(v), 16)
	}
	return string(b)
}

func (t *Table) add(fold int, hit bool, x []float64) {
	t.addN(fold, hit, x, 1)
}

func (t *Table) addN(fold int, hit bool, x []float64, n int) {
	k := rowKey(fold, hit, x)
	if r := t.rows[k]; r != nil {
		r.n += n
		return
	}
	t.rows[k] = &tableRow{fold: fold, hit: hit, n: n, x: slices.Clone(x), key: k}
}

// sorted returns the rows in their canonical order: by fold, label, then
// inputs.
func (t *Table) sorted() []tableRow {
	out := make([]tableRow, 0, len(t.rows))
	for _, r := range t.rows {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b tableRow) int {
		if c := cmp.Compare(a.fold, b.fold); c != 0 {
			return c
		}
		if c := compareBool(a.hit, b.hit); c != 0 {
			return c
		}
		if c := slices.Compare(a.x, b.x); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	return out
}

// Episodes returns how many episodes the table's offers are of.
func (t *Table) Episodes() int { return t.episodes }

// Of returns the learned.digest of the flow the table was replayed with.
func (t *Table) Of() string { return t.of }

// Digest returns the sum of the table's episodes' digests, as a flow's
// learned.digest says it: equal to the flow's when the table holds every
// episode the flow was learned from.
func (t *Table) Digest() string { return flow.DigestPrefix + hex.EncodeToString(t.digest[:]) }

// Merge adds o's rows and episodes to t. Both must have been replayed
// with the same flow and features.
func (t *Table) Merge(o *Table) error {
	switch {
	case o.of != t.of:
		return &flow.FieldError{Field: "shard.table.of", Err: fmt.Errorf("replayed with the flow of %s, the first flow's table with %s", o.of, t.of)}
	case !slices.Equal(o.features, t.features):
		return &flow.FieldError{Field: "shard.table.features", Err: fmt.Errorf("%s, the first flow has %s", strings.Join(o.features, ","), strings.Join(t.features, ","))}
	}
	for _, r := range o.rows {
		t.addN(r.fold, r.hit, r.x, r.n)
	}
	for k, r := range o.rates {
		t.addRateN(k, r.offers, r.hits)
	}
	t.episodes += o.episodes
	flow.AddDigest(&t.digest, o.digest[:])
	return nil
}

// tableJSON is a Table in a flow file's "shard" member. Each row is
// [fold, hit (0 or 1), offers, inputs...], sorted.
type tableJSON struct {
	Of       string      `json:"of"`
	Features []string    `json:"features"`
	Episodes int         `json:"episodes"`
	Digest   string      `json:"digest"`
	Rows     [][]float64 `json:"rows"`
	// Rates are the held-out hit rates' cells, sorted: each
	// {site, lookup, agent, fold, offers, hits}.
	Rates []rateJSON `json:"rates,omitempty"`
}

type rateJSON struct {
	Site    string `json:"site"`
	Lookup  string `json:"lookup"`
	Binding string `json:"binding"`
	Agent   string `json:"agent,omitempty"`
	Fold    int    `json:"fold"`
	Offers  int    `json:"offers"`
	Hits    int    `json:"hits"`
}

func (t *Table) toJSON() tableJSON {
	j := tableJSON{Of: t.of, Features: t.features, Episodes: t.episodes, Digest: t.Digest(), Rows: [][]float64{}}
	for _, r := range t.sorted() {
		row := make([]float64, 0, 3+len(r.x))
		hit := 0.0
		if r.hit {
			hit = 1
		}
		row = append(row, float64(r.fold), hit, float64(r.n))
		j.Rows = append(j.Rows, append(row, r.x...))
	}
	for _, k := range t.sortedRates() {
		r := t.rates[k]
		j.Rates = append(j.Rates, rateJSON{Site: k.site, Lookup: k.lookup, Binding: k.binding, Agent: k.agent, Fold: k.fold, Offers: r.offers, Hits: r.hits})
	}
	return j
}

func tableFromJSON(j tableJSON) (*Table, error) {
	bad := func(field, format string, args ...any) error {
		return &flow.FieldError{Field: "shard.table." + field, Err: fmt.Errorf(format, args...)}
	}
	t := &Table{of: j.Of, features: j.Features, episodes: j.Episodes, rows: map[string]*tableRow{}}
	if _, err := flow.ParseDigest(j.Of); err != nil {
		return nil, bad("of", "%v", err)
	}
	d, err := flow.ParseDigest(j.Digest)
	if err != nil {
		return nil, bad("digest", "%v", err)
	}
	t.digest = d
	if len(j.Features) == 0 {
		return nil, bad("features", "empty")
	}
	for i, r := range j.Rows {
		if len(r) != 3+len(j.Features) {
			return nil, bad(fmt.Sprintf("rows[%d]", i), "%d numbers, want 3 and one for each of %d features", len(r), len(j.Features))
		}
		fold, hit, n := r[0], r[1], r[2]
		if fold != math.Trunc(fold) || fold < -1 || fold > 1000 || hit != 0 && hit != 1 || n != math.Trunc(n) || n < 1 {
			return nil, bad(fmt.Sprintf("rows[%d]", i), "want a fold, 0 or 1, and a count of offers first")
		}
		t.addN(int(fold), hit == 1, r[3:], int(n))
	}
	for i, r := range j.Rates {
		if r.Site == "" || r.Lookup == "" || r.Fold < 0 || r.Fold > 1000 || r.Offers < 1 || r.Hits < 0 || r.Hits > r.Offers {
			return nil, bad(fmt.Sprintf("rates[%d]", i), "want a site, a lookup, a fold, offers (1 or more) and hits (at most the offers)")
		}
		t.addRateN(rateKey{site: r.Site, lookup: r.Lookup, binding: r.Binding, agent: r.Agent, fold: r.Fold}, r.Offers, r.Hits)
	}
	return t, nil
}

// shardFile is a flow file's "shard" member: the partial counts of
// hoist learn --shard, or the training table of hoist learn --shard
// --counts.
type shardFile struct {
	Counts json.RawMessage `json:"counts,omitempty"`
	Table  *tableJSON      `json:"table,omitempty"`
}

// ShardOfCounts returns the "shard" member of the flow hoist learn --shard
// writes: the Learner's partial counts.
func (l *Learner) ShardOfCounts() (json.RawMessage, error) {
	c, err := l.Shard()
	if err != nil {
		return nil, err
	}
	return json.Marshal(shardFile{Counts: c})
}

// ShardOfTable returns the "shard" member of the flow hoist learn --shard
// --counts writes: the training table.
func (t *Table) ShardOfTable() (json.RawMessage, error) {
	j := t.toJSON()
	return json.Marshal(shardFile{Table: &j})
}

// ReadShard reads a flow file's "shard" member: partial counts, or a
// training table (one is nil).
func ReadShard(raw json.RawMessage) (*Learner, *Table, error) {
	var s shardFile
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, nil, &flow.FieldError{Field: "shard." + te.Field, Err: fmt.Errorf("want %s, got %s", te.Type, te.Value)}
		}
		return nil, nil, &flow.FieldError{Field: "shard", Err: err}
	}
	switch {
	case (s.Counts == nil) == (s.Table == nil):
		return nil, nil, &flow.FieldError{Field: "shard", Err: errors.New("want one of counts and table")}
	case s.Table != nil:
		t, err := tableFromJSON(*s.Table)
		return nil, t, err
	}
	l, err := FromShard(s.Counts)
	if err != nil {
		var fe *flow.FieldError
		if errors.As(err, &fe) {
			fe.Field = strings.Replace(fe.Field, "shard", "shard.counts", 1)
		}
		return nil, nil, err
	}
	return l, nil, nil
}

// episodeDigest is the digest of one episode: its id, task, calls,
// arguments and results.
func episodeDigest(ep *episode.Episode) []byte {
	h := sha256.New()
	var buf []byte
	w := func(s string) {
		buf = strconv.AppendInt(buf[:0], int64(len(s)), 10)
		buf = append(buf, ':')
		buf = append(buf, s...)
		h.Write(buf)
	}
	w(ep.ID)
	w(ep.TaskID)
	for _, c := range ep.Calls() {
		w(c.Tool)
		w(string(c.Args))
		if c.Result != nil {
			w(c.Result.Text)
			if c.Result.IsError {
				w("error")
			}
		}
	}
	return h.Sum(nil)
}
