package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
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

// readFlow is one flow log read whole.
type readFlow struct {
	file      store.FlowFile
	flow      store.Flow
	malformed []*mcplog.InputError
}

// countingHash hashes and counts what is read through it.
type countingHash struct {
	h hash.Hash
	n int64
}

func (c *countingHash) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.h.Write(p)
}

// readFlowLog reads the flow log f of the session log logPath, whose
// server is server_idx server of its episode and whose session id is
// session, through mcplog's reader. A malformed line is reported and
// skipped; a torn last line (the proxy still writing) is left for the next
// ingest.
func readFlowLog(f *flowFile, logPath, session string, server int) (*readFlow, error) {
	file, err := os.Open(f.path)
	if err != nil {
		return nil, fmt.Errorf("opening flow log: %w", err)
	}
	defer file.Close()
	sum := &countingHash{h: sha256.New()}
	r := mcplog.NewFlowReader(io.TeeReader(file, sum), f.path)
	out := &readFlow{}
	run, inRun := 0, 0
	off := ""
	for {
		l, err := r.Next()
		if err == io.EOF {
			break
		}
		var ie *mcplog.InputError
		if errors.As(err, &ie) {
			out.malformed = append(out.malformed, ie)
			continue
		}
		if err != nil {
			return nil, err
		}
		switch {
		case l.Decision != nil:
			out.flow.Decisions = append(out.flow.Decisions, store.Decision{Server: server, Session: session, Run: run, Index: inRun, Line: l.Line,
				FlowDecision: *l.Decision, Raw: string(l.Raw)})
			inRun++
		case l.Run != nil:
			out.flow.Runs = append(out.flow.Runs, store.Run{Server: server, Session: session, Index: run, Line: l.Line, FlowRun: *l.Run, Raw: string(l.Raw)})
			run++
			inRun = 0
		case l.Off != nil:
			off = l.Off.Reason
		}
	}
	out.file = store.FlowFile{
		Path: f.path, Dir: filepath.Dir(f.path), LogPath: logPath, Size: sum.n, MtimeUnixNS: f.mtime, SHA256: hex.EncodeToString(sum.h.Sum(nil)),
		Lines: int64(r.Lines()), Malformed: int64(len(out.malformed)), OffReason: off,
	}
	return out, nil
}
