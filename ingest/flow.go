package ingest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/store"
)

// flowSuffix ends the flow log hoist-mcp --flow writes beside a session log
// <session>.jsonl: <session>.flow.jsonl (DESIGN.md, "Flow log").
const flowSuffix = ".flow.jsonl"

// flowPathOf returns the path of the flow log beside the session log at
// path.
func flowPathOf(path string) string {
	return strings.TrimSuffix(strings.TrimSuffix(path, ".zst"), ".jsonl") + flowSuffix
}

// flowFile is a flow log found beside a session log.
type flowFile struct {
	path        string
	size, mtime int64
}

// flowLine is a flow log line, decoded with the fields ingest stores: the
// decision and run lines of flow.Decision and flow.RunRecord, which ingest
// reads as JSON rather than import flow (DESIGN.md, "Packages").
type flowLine struct {
	Type string `json:"type"`
	Rule struct {
		Decider   string  `json:"decider"`
		Threshold float64 `json:"threshold"`
		Epsilon   float64 `json:"epsilon"`
	} `json:"rule"`
	Shadow bool `json:"shadow"`

	// decision
	Site       string          `json:"site"`
	Offers     json.RawMessage `json:"offers"`
	Greedy     *int            `json:"greedy"`
	Taken      *int            `json:"taken"`
	Propensity float64         `json:"propensity"`

	// run
	Call       string          `json:"call"`
	Failed     bool            `json:"failed"`
	MaxLookups int             `json:"max_lookups"`
	Fold       int             `json:"fold"`
	Sites      json.RawMessage `json:"sites"`
	Surprise   float64         `json:"surprise"`
}

type offer struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
}

// readFlow is one flow log read whole.
type readFlow struct {
	file      store.FlowFile
	flow      store.Flow
	malformed []*mcplog.InputError
}

// readFlowLog reads the flow log f of the session log logPath, whose
// server is server_idx server of its episode and whose session id is
// session. A malformed line is reported and skipped; a torn last line (the
// proxy still writing) is left for the next ingest.
func readFlowLog(f *flowFile, logPath, session string, server int) (*readFlow, error) {
	file, err := os.Open(f.path)
	if err != nil {
		return nil, fmt.Errorf("opening flow log: %w", err)
	}
	defer file.Close()
	h := sha256.New()
	br := bufio.NewReaderSize(io.TeeReader(file, h), 64<<10)
	out := &readFlow{}
	var size int64
	lineNo, run, inRun := 0, 0, 0
	for {
		line, err := br.ReadBytes('\n')
		size += int64(len(line))
		if len(line) == 0 && err != nil {
			if err != io.EOF {
				return nil, fmt.Errorf("reading flow log %s: %w", f.path, err)
			}
			break
		}
		lineNo++
		torn := err == io.EOF // no newline: the proxy may still be writing it
		text := bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		d, r, field, perr := parseFlowLine(text)
		if perr != nil {
			if !torn {
				out.malformed = append(out.malformed, &mcplog.InputError{File: f.path, Line: lineNo, Field: field, Err: perr})
			}
			continue
		}
		switch {
		case d != nil:
			d.Server, d.Session, d.Line, d.Run, d.Index = server, session, lineNo, run, inRun
			out.flow.Decisions = append(out.flow.Decisions, *d)
			inRun++
		case r != nil:
			r.Server, r.Session, r.Line, r.Index = server, session, lineNo, run
			out.flow.Runs = append(out.flow.Runs, *r)
			run++
			inRun = 0
		}
	}
	out.file = store.FlowFile{
		Path: f.path, Dir: filepath.Dir(f.path), LogPath: logPath, Size: size, MtimeUnixNS: f.mtime, SHA256: hex.EncodeToString(h.Sum(nil)),
		Lines: int64(lineNo), Malformed: int64(len(out.malformed)),
	}
	return out, nil
}

// parseFlowLine decodes one line: a decision or a run, or an error and the
// field at fault.
func parseFlowLine(text []byte) (*store.Decision, *store.Run, string, error) {
	var l flowLine
	if err := json.Unmarshal(text, &l); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, nil, te.Field, fmt.Errorf("want %s, got JSON %s", mcplog.TypeWord(te.Type), te.Value)
		}
		return nil, nil, "", fmt.Errorf("not a JSON object: %w", err)
	}
	rule := store.Rule{Decider: l.Rule.Decider, Threshold: l.Rule.Threshold, Epsilon: l.Rule.Epsilon}
	switch l.Type {
	case "decision":
		if l.Site == "" {
			return nil, nil, "site", errors.New("missing")
		}
		var offers []offer
		if len(l.Offers) > 0 && !bytes.Equal(l.Offers, []byte("null")) {
			if err := json.Unmarshal(l.Offers, &offers); err != nil {
				return nil, nil, "offers", errors.New("want an array of offers, each with a tool and its args")
			}
		}
		if l.Greedy == nil || *l.Greedy < -1 || *l.Greedy >= len(offers) {
			return nil, nil, "greedy", fmt.Errorf("want -1 or an index into %d offers", len(offers))
		}
		if l.Taken == nil || *l.Taken < -1 || *l.Taken >= len(offers) {
			return nil, nil, "taken", fmt.Errorf("want -1 or an index into %d offers", len(offers))
		}
		d := &store.Decision{Site: l.Site, NOffers: len(offers), Offers: json.RawMessage("[]"), Greedy: *l.Greedy, Taken: *l.Taken,
			Propensity: l.Propensity, Rule: rule, Shadow: l.Shadow, Raw: string(text)}
		if len(offers) > 0 {
			d.Offers = append(json.RawMessage(nil), l.Offers...)
		}
		if t := *l.Taken; t >= 0 {
			d.TakenTool = sql.NullString{String: offers[t].Tool, Valid: true}
			d.TakenArgs = append(json.RawMessage(nil), offers[t].Args...)
		}
		return d, nil, "", nil
	case "run":
		var sites [][]json.RawMessage
		if len(l.Sites) > 0 && !bytes.Equal(l.Sites, []byte("null")) {
			if err := json.Unmarshal(l.Sites, &sites); err != nil {
				return nil, nil, "sites", errors.New("want an array of [address, value, logp]")
			}
		}
		r := &store.Run{CallTool: l.Call, Failed: l.Failed, MaxLookups: l.MaxLookups, Fold: l.Fold, Rule: rule,
			Sites: json.RawMessage("[]"), Surprise: l.Surprise, Shadow: l.Shadow, Raw: string(text)}
		if len(sites) > 0 {
			r.Sites = append(json.RawMessage(nil), l.Sites...)
		}
		logp, finite := 0.0, true
		for i, s := range sites {
			var addr string
			if len(s) != 3 || json.Unmarshal(s[0], &addr) != nil {
				return nil, nil, fmt.Sprintf("sites[%d]", i), errors.New("want [address, value, logp]")
			}
			var lp *float64
			if err := json.Unmarshal(s[2], &lp); err != nil {
				return nil, nil, fmt.Sprintf("sites[%d]", i), errors.New("logp: want a number or null")
			}
			switch {
			case strings.HasPrefix(addr, "decide#"):
				r.NDecisions++
				if lp == nil || math.IsInf(*lp, 0) || math.IsNaN(*lp) {
					finite = false
				} else {
					logp += *lp
				}
			case strings.HasPrefix(addr, "obs#"):
				r.NLookups++
			}
		}
		if finite {
			r.LogPolicy = sql.NullFloat64{Float64: logp, Valid: true}
		}
		return nil, r, "", nil
	default:
		return nil, nil, "type", fmt.Errorf("want \"decision\" or \"run\", got %q", l.Type)
	}
}
