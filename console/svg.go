package console

import (
	"fmt"
	"html"
	"html/template"
	"strings"
	"unicode/utf8"

	"github.com/hoist-mcp/hoist/audit"
	"github.com/hoist-mcp/hoist/flow"
)

// The graphs are drawn on the server, as SVG, so that the page needs no
// script to show them and a screenshot is the page as served.

const (
	graphWidth = 960
	nodeW      = 240
	nodeH      = 30
	rowGap     = 18
	nodeClip   = 30 // runes of a node's name: 30 at 12px fit its box
	laneH      = 18 // a lookup's row in the middle lane
	laneL      = 10 + nodeW + 60
	laneR      = graphWidth - nodeW - 10 - 80 // the tools gather more edges: a wider gap
	labelClip  = 40                           // runes of a binding: with its score, 46 at 11px fit the lane
	graphTop   = 40
)

func esc(s string) string { return html.EscapeString(s) }

func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// flowGraph draws a flow's review: its sites on the left, the tools they
// look up on the right, and between them a lane with a row per candidate
// lookup, labelled with its score (P(tool) × P(binding)) and binding, that
// its edge runs along; the lookups the flow would not make dashed, the
// tools it never calls shaded. Every label has a row of its own, so none
// overlaps another whatever the flow; a name or binding too long for its
// box is cut and the full text is its tooltip.
func flowGraph(rev *flow.Review) template.HTML {
	type edge struct {
		site string
		l    flow.LookupReview
		y    int // the lane row's line
	}
	siteY := map[string]int{}
	tools := map[string]int{}
	var siteOrder, toolOrder []string
	var edges []edge
	y := graphTop
	for _, s := range rev.Sites {
		if len(s.Lookups) == 0 {
			continue
		}
		name := siteName(s)
		// A site's block is as tall as its node or its lookups' rows,
		// whichever is taller; the node sits in its middle.
		block := max(nodeH+rowGap, len(s.Lookups)*laneH)
		if _, ok := siteY[name]; !ok {
			siteY[name] = y + block/2 - nodeH/2
			siteOrder = append(siteOrder, name)
		}
		top := y + (block-len(s.Lookups)*laneH)/2
		for i, l := range s.Lookups {
			edges = append(edges, edge{site: name, l: l, y: top + i*laneH + laneH - 4})
			if _, ok := tools[l.Tool]; !ok {
				tools[l.Tool] = 0
				toolOrder = append(toolOrder, l.Tool)
			}
		}
		y += block
	}
	for _, t := range rev.Never {
		if _, ok := tools[t.Tool]; !ok {
			tools[t.Tool] = 0
			toolOrder = append(toolOrder, t.Tool)
		}
	}
	inner := max(y-graphTop, len(toolOrder)*(nodeH+rowGap), nodeH+rowGap)
	height := graphTop + inner + 20
	// Spread the tools over the height of the sites' blocks.
	step := float64(inner) / float64(max(len(toolOrder), 1))
	for i, name := range toolOrder {
		tools[name] = graphTop + int(step*float64(i)+step/2) - nodeH/2
	}
	never := map[string]string{}
	for _, t := range rev.Never {
		never[t.Tool] = t.Why
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="graph" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="sites and lookups">`, graphWidth, height, graphWidth, height)
	fmt.Fprintf(&b, `<text x="10" y="20" class="caption">after the call (site)</text><text x="%d" y="20" class="caption">looks up</text>`, graphWidth-nodeW-10)
	fmt.Fprintf(&b, `<text x="%d" y="20" class="caption" text-anchor="middle">score = P(%s) × P(binding); threshold %.2f</text>`, graphWidth/2, esc(string(rev.Rule.Decider)), rev.Rule.Threshold)
	x1, x2 := 10+nodeW, graphWidth-nodeW-10
	for _, e := range edges {
		y1, y2 := siteY[e.site]+nodeH/2, tools[e.l.Tool]+nodeH/2
		cls := "edge act"
		if !e.l.Act {
			cls = "edge skip"
		}
		// From the site into the lookup's row, along it under the label,
		// and out to the tool.
		m1, m2 := (x1+laneL)/2, (laneR+x2)/2
		fmt.Fprintf(&b, `<path class="%s" d="M%d %d C%d %d %d %d %d %d L%d %d C%d %d %d %d %d %d"><title>%s → %s: %s</title></path>`,
			cls, x1, y1, m1, y1, m1, e.y, laneL, e.y, laneR, e.y, m2, e.y, m2, y2, x2, y2, esc(e.site), esc(e.l.Tool), esc(lookupNote(e.l)))
		label, full := fmt.Sprintf("%.2f", e.l.Score), ""
		if e.l.Binding != nil {
			bs := flow.BindingString(e.l.Binding)
			label += "  " + clipRunes(bs, labelClip)
			if utf8.RuneCountInString(bs) > labelClip {
				full = "<title>" + esc(bs) + "</title>"
			}
		}
		fmt.Fprintf(&b, `<text class="edge-label" x="%d" y="%d">%s%s</text>`, laneL+4, e.y-4, full, esc(label))
	}
	for _, name := range siteOrder {
		fmt.Fprintf(&b, `<g class="node site">%s<rect x="10" y="%d" width="%d" height="%d" rx="4"/><text x="20" y="%d">%s</text></g>`, clipTitle(name), siteY[name], nodeW, nodeH, siteY[name]+20, esc(clipRunes(name, nodeClip)))
	}
	for _, name := range toolOrder {
		cls := "node tool"
		title := clipTitle(name)
		if why, ok := never[name]; ok {
			cls, title = "node never", "<title>"+esc(name)+" is never called: "+esc(why)+"</title>"
		}
		fmt.Fprintf(&b, `<g class="%s">%s<rect x="%d" y="%d" width="%d" height="%d" rx="4"/><text x="%d" y="%d">%s</text></g>`, cls, title, x2, tools[name], nodeW, nodeH, x2+10, tools[name]+20, esc(clipRunes(name, nodeClip)))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// clipTitle is a node's tooltip: its full name when the node shows it cut.
func clipTitle(name string) string {
	if utf8.RuneCountInString(name) > nodeClip {
		return "<title>" + esc(name) + "</title>"
	}
	return ""
}

func siteName(s flow.SiteReview) string {
	if s.Failed {
		return s.Tool + " (failed)"
	}
	return s.Tool
}

func lookupNote(l flow.LookupReview) string {
	if l.Act {
		return fmt.Sprintf("looked up, score %.2f", l.Score)
	}
	return "not looked up: " + l.Why
}

// savingsChart draws the audit's sites as bars: the lookups split into
// hits and detours, and the LLM turns each site saved.
func savingsChart(rep *audit.Report) template.HTML {
	const (
		labelW = 260
		barW   = 300
		rowH   = 26
	)
	maxL, maxS := 1.0, 1.0
	for _, r := range rep.Sites {
		maxL = max(maxL, float64(r.Lookups))
		maxS = max(maxS, r.Counts.Saved)
	}
	height := 50 + rowH*max(len(rep.Sites), 1)
	width := labelW + 2*barW + 120
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="savings per site">`, width, height, width, height)
	fmt.Fprintf(&b, `<text x="%d" y="18" class="caption">lookups: <tspan class="hit-t">hits</tspan> and <tspan class="detour-t">detours</tspan></text>`, labelW)
	fmt.Fprintf(&b, `<text x="%d" y="18" class="caption">LLM turns saved</text>`, labelW+barW+60)
	for i, r := range rep.Sites {
		y := 34 + i*rowH
		hw := int(float64(barW) * float64(r.Hits) / maxL)
		dw := int(float64(barW) * float64(r.Detours) / maxL)
		sw := int(float64(barW) * r.Counts.Saved / maxS)
		fmt.Fprintf(&b, `<g class="site-row"><text x="%d" y="%d" text-anchor="end">%s</text>`, labelW-8, y+14, esc(clipRunes(r.Name, 36)))
		fmt.Fprintf(&b, `<rect class="hit" x="%d" y="%d" width="%d" height="18"><title>%d hits</title></rect>`, labelW, y, hw, r.Hits)
		fmt.Fprintf(&b, `<rect class="detour" x="%d" y="%d" width="%d" height="18"><title>%d detours</title></rect>`, labelW+hw, y, dw, r.Detours)
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="num">%d/%d</text>`, labelW+hw+dw+4, y+14, r.Hits, r.Lookups)
		fmt.Fprintf(&b, `<rect class="saved" x="%d" y="%d" width="%d" height="18"><title>%.1f turns saved</title></rect>`, labelW+barW+60, y, sw, r.Counts.Saved)
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="num">%.1f</text></g>`, labelW+barW+64+sw, y+14, r.Counts.Saved)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// daysChart draws the sessions of each day as a row of bars: how many
// sessions began that day (UTC), their hits and the LLM turns they saved.
func daysChart(days []tally) template.HTML { return tallyChart(days, "day", "savings per day") }

// hostsChart draws the same bars for each host session.
func hostsChart(hosts []tally) template.HTML {
	return tallyChart(hosts, "host", "sessions, hits and turns saved per host")
}

// tallyChart draws one row of bars per tally: sessions, hits and LLM
// turns saved, each scaled to its own column's largest; kind names the
// rows ("day", "host") in their class and data attribute.
func tallyChart(days []tally, kind, label string) template.HTML {
	const (
		labelW = 110
		barW   = 220
		rowH   = 26
	)
	maxN, maxH, maxS := 1.0, 1.0, 1.0
	for _, d := range days {
		maxN = max(maxN, float64(d.Sessions))
		maxH = max(maxH, d.Hits)
		maxS = max(maxS, d.Saved)
	}
	col := barW + 60
	height := 50 + rowH*max(len(days), 1)
	width := labelW + 3*col
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart %ss" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`, kind, width, height, width, height, esc(label))
	fmt.Fprintf(&b, `<text x="%d" y="18" class="caption">sessions</text><text x="%d" y="18" class="caption"><tspan class="hit-t">hits</tspan></text><text x="%d" y="18" class="caption">LLM turns saved</text>`, labelW, labelW+col, labelW+2*col)
	for i, d := range days {
		y := 34 + i*rowH
		nw := int(float64(barW) * float64(d.Sessions) / maxN)
		hw := int(float64(barW) * d.Hits / maxH)
		sw := int(float64(barW) * d.Saved / maxS)
		fmt.Fprintf(&b, `<g class="%[1]s-bars" data-%[1]s="%[2]s" data-sessions="%[3]d" data-hits="%.1[4]f" data-saved="%.1[5]f"><text x="%[6]d" y="%[7]d" text-anchor="end">%[8]s</text>`, kind, esc(d.Key), d.Sessions, d.Hits, d.Saved, labelW-8, y+14, esc(keyLabel(d.Key)))
		fmt.Fprintf(&b, `<rect class="sessions" x="%d" y="%d" width="%d" height="18"><title>%s: %s</title></rect><text x="%d" y="%d" class="num">%d</text>`, labelW, y, nw, esc(d.Key), plural(d.Sessions, "session"), labelW+nw+4, y+14, d.Sessions)
		fmt.Fprintf(&b, `<rect class="hit" x="%d" y="%d" width="%d" height="18"><title>%s: %.1f hits</title></rect><text x="%d" y="%d" class="num">%.1f</text>`, labelW+col, y, hw, esc(d.Key), d.Hits, labelW+col+hw+4, y+14, d.Hits)
		fmt.Fprintf(&b, `<rect class="saved" x="%d" y="%d" width="%d" height="18"><title>%s: %.1f turns saved</title></rect><text x="%d" y="%d" class="num">%.1f</text></g>`, labelW+2*col, y, sw, esc(d.Key), d.Saved, labelW+2*col+sw+4, y+14, d.Saved)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// keyLabel is a tally's key as a chart's row label: "(none)" for sessions
// without one, and a long key cut to what the label column holds (the
// whole key is the row's data attribute and the table's).
func keyLabel(k string) string {
	if k == "" {
		return "(none)"
	}
	if r := []rune(k); len(r) > 14 {
		return string(r[:13]) + "…"
	}
	return k
}
