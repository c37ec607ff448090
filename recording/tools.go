package recording

import (
	"cmp"
	"slices"
	"strings"

	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
	"github.com/hoist-mcp/hoist/toolpin"
)

// Listing is one tools/list answer of a recorded session, its pages
// joined: the tools a server listed at a time.
type Listing struct {
	Server  string `json:"server"`
	Session string `json:"session"`
	// Where is the answer's first request, file:line; UnixMS when it was
	// sent (the session's start plus its t_ms).
	Where  string         `json:"where"`
	UnixMS int64          `json:"unix_ms"`
	Tools  []toolpin.Tool `json:"tools"`
}

// ServerName names the session's server: the header's server_name (the
// proxy's --server-name), else the name initialize's answer gives, else
// the server's command or URL.
func ServerName(s *Session) string {
	if s.Header.ServerName != "" {
		return s.Header.ServerName
	}
	for _, x := range s.Exchanges {
		if x.Method != mcpmsg.MethodInitialize || x.Result == nil {
			continue
		}
		if info, ok := jsontext.Lookup(x.Result, "serverInfo"); ok {
			if name, ok := jsontext.Lookup(info, "name"); ok && jsontext.Kind(name) == '"' && jsontext.Unquote(name) != "" {
				return jsontext.Unquote(name)
			}
		}
	}
	if len(s.Header.ServerCommand) > 0 {
		return strings.Join(s.Header.ServerCommand, " ")
	}
	return s.Header.Upstream
}

// Listings returns the session's tools/list answers from its server, in
// order. A request with a cursor continues the listing before it.
func Listings(s *Session) []Listing {
	var out []Listing
	server := ServerName(s)
	for _, x := range s.Exchanges {
		if x.Method != mcpmsg.MethodToolsList || x.AnsweredBy != mcplog.FromServer || x.Result == nil {
			continue
		}
		tools, _ := toolpin.FromList(x.Result)
		if _, cursor := jsontext.Lookup(x.Params, "cursor"); cursor && len(out) > 0 {
			last := &out[len(out)-1]
			last.Tools = append(last.Tools, tools...)
			continue
		}
		out = append(out, Listing{Server: server, Session: s.Header.Session, Where: x.Where(), UnixMS: s.Header.StartedUnixMS + x.TMS, Tools: tools})
	}
	return out
}

// ToolHistory is what a server listed across recorded sessions.
type ToolHistory struct {
	Server string `json:"server"`
	// Sessions counts the sessions that listed its tools.
	Sessions int `json:"sessions"`
	// Latest is its last listing.
	Latest Listing `json:"latest"`
	// Changes are the differences between each listing and the one before
	// it, in time order.
	Changes []ToolChange `json:"changes"`
}

// ToolChange is a change of a tool's definition (toolpin.Change), and the
// listing that first showed it.
type ToolChange struct {
	Session string `json:"session"`
	Where   string `json:"where"`
	UnixMS  int64  `json:"unix_ms"`
	toolpin.Change
}

// ToolHistories returns each server's tool history across the sessions,
// servers by name. Sessions are taken in the order they started (then by
// session id); within a session, its listings in order.
func ToolHistories(sessions []*Session) []ToolHistory {
	ss := slices.Clone(sessions)
	slices.SortStableFunc(ss, func(a, b *Session) int {
		return cmp.Or(cmp.Compare(a.Header.StartedUnixMS, b.Header.StartedUnixMS), cmp.Compare(a.Header.Session, b.Header.Session))
	})
	byServer := map[string]*ToolHistory{}
	var names []string
	for _, s := range ss {
		ls := Listings(s)
		if len(ls) == 0 {
			continue
		}
		h := byServer[ls[0].Server]
		if h == nil {
			h = &ToolHistory{Server: ls[0].Server}
			byServer[h.Server] = h
			names = append(names, h.Server)
		}
		h.Sessions++
		for i, l := range ls {
			if h.Sessions > 1 || i > 0 {
				for _, c := range toolpin.Compare(h.Latest.Tools, l.Tools) {
					h.Changes = append(h.Changes, ToolChange{Session: l.Session, Where: l.Where, UnixMS: l.UnixMS, Change: c})
				}
			}
			h.Latest = l
		}
	}
	slices.Sort(names)
	out := make([]ToolHistory, 0, len(names))
	for _, n := range names {
		out = append(out, *byServer[n])
	}
	return out
}
