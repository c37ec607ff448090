package episode

import (
	"sort"
	"time"

	"github.com/hoist-mcp/hoist/mcplog"
)

// LogSpan returns when a log started (its header's started_unix_ms) and
// when its proxy read its last line.
func LogSpan(log *mcplog.Log) (start, end time.Time) {
	s := log.Header.StartedUnixMS
	last := int64(0)
	for i := range log.Entries {
		last = max(last, log.Entries[i].TMS)
	}
	return time.UnixMilli(s).UTC(), time.UnixMilli(s + last).UTC()
}

// HostSessions groups logs by the host session they belong to (manual,
// "Several servers": "The logs of one host session that ran at the same
// time are one session"): logs with the same header host_session whose
// spans (LogSpan) overlap, directly or through another log of the group.
// A log without a host_session is a group of its own. Groups come in order
// of their first log's start, and each group's logs by start; give each
// group to FromLogs. Whether a directory then holds a session of several
// servers (so that every log's tools in it are qualified, Options.Qualify)
// is for the caller to say: it is any group of more than one log.
func HostSessions(logs []*mcplog.Log) [][]*mcplog.Log {
	type span struct {
		log        *mcplog.Log
		start, end int64
	}
	byHost := map[string][]span{}
	var hosts []string
	var groups [][]*mcplog.Log
	for _, l := range logs {
		s, e := LogSpan(l)
		if l.Header.HostSession == "" {
			groups = append(groups, []*mcplog.Log{l})
			continue
		}
		h := l.Header.HostSession
		if _, ok := byHost[h]; !ok {
			hosts = append(hosts, h)
		}
		byHost[h] = append(byHost[h], span{l, s.UnixMilli(), e.UnixMilli()})
	}
	for _, h := range hosts {
		spans := byHost[h]
		sort.SliceStable(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
		var cur []*mcplog.Log
		var end int64
		for _, sp := range spans {
			if cur != nil && sp.start > end {
				groups = append(groups, cur)
				cur = nil
			}
			if cur == nil {
				end = sp.end
			}
			cur = append(cur, sp.log)
			end = max(end, sp.end)
		}
		groups = append(groups, cur)
	}
	sort.SliceStable(groups, func(i, j int) bool {
		return groups[i][0].Header.StartedUnixMS < groups[j][0].Header.StartedUnixMS
	})
	return groups
}
