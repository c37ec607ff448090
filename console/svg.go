package console

import (
	"fmt"
	"html"
	"html/template"
	"strings"

	"github.com/hoist-mcp/hoist/audit"
	"github.com/hoist-mcp/hoist/flow"
)

// The graphs are drawn on the server, as SVG, so that the page needs no
// script to show them and a screenshot is the page as served.

const (
	graphWidth = 960
	nodeW      = 250
	nodeH      = 30
	rowGap     = 18
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
// look up on the right, an edge per candidate lookup labelled with its
// score (P(tool) × P(binding)) and binding; the lookups the flow would not
// make dashed, the tools it never calls shaded.
func flowGraph(rev *flow.Review) template.HTML {
	type node struct{ y int }
	sites := map[string]node{}
	tools := map[string]node{}
	var siteOrder, toolOrder []string
	for _, s := range rev.Sites {
		if len(s.Lookups) == 0 {
			continue
		}
		name := siteName(s)
		if _, ok := sites[name]; !ok {
			sites[name] = node{}
			siteOrder = append(siteOrder, name)
		}
		for _, l := range s.Lookups {
			if _, ok := tools[l.Tool]; !ok {
				tools[l.Tool] = node{}
				toolOrder = append(toolOrder, l.Tool)
			}
		}
	}
	for _, t := range rev.Never {
		if _, ok := tools[t.Tool]; !ok {
			tools[t.Tool] = node{}
			toolOrder = append(toolOrder, t.Tool)
		}
	}
	n := max(len(siteOrder), len(toolOrder), 1)
	height := 60 + n*(nodeH+rowGap)
	// Spread the shorter column over the height of the longer.
	place := func(order []string, m map[string]node) {
		step := float64(height-60) / float64(max(len(order), 1))
		for i, name := range order {
			m[name] = node{y: 40 + int(step*float64(i)+step/2) - nodeH/2}
		}
	}
	place(siteOrder, sites)
	place(toolOrder, tools)
	never := map[string]string{}
	for _, t := range rev.Never {
		never[t.Tool] = t.Why
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="graph" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="sites and lookups">`, graphWidth, height, graphWidth, height)
	fmt.Fprintf(&b, `<text x="10" y="20" class="caption">after the call (site)</text><text x="%d" y="20" class="caption">looks up</text>`, graphWidth-nodeW-10)
	fmt.Fprintf(&b, `<text x="%d" y="20" class="caption" text-anchor="middle">score = P(%s) × P(binding); threshold %.2f</text>`, graphWidth/2, esc(string(rev.Rule.Decider)), rev.Rule.Threshold)
	x1, x2 := 10+nodeW, graphWidth-nodeW-10
	for _, s := range rev.Sites {
		if len(s.Lookups) == 0 {
			continue
		}
		from := sites[siteName(s)]
		for _, l := range s.Lookups {
			to := tools[l.Tool]
			y1, y2 := from.y+nodeH/2, to.y+nodeH/2
			cls := "edge act"
			if !l.Act {
				cls = "edge skip"
			}
			mx := (x1 + x2) / 2
			fmt.Fprintf(&b, `<path class="%s" d="M%d %d C%d %d %d %d %d %d"><title>%s → %s: %s</title></path>`, cls, x1, y1, mx, y1, mx, y2, x2, y2, esc(siteName(s)), esc(l.Tool), esc(lookupNote(l)))
			label := fmt.Sprintf("%.2f", l.Score)
			if l.Binding != nil {
				label += "  " + clipRunes(flow.BindingString(l.Binding), 44)
			}
			// The label sits a third of the way along its curve, where
			// the edges of one site have already parted.
			lx, ly := bezier(1.0/3, float64(x1), float64(mx), float64(mx), float64(x2)), bezier(1.0/3, float64(y1), float64(y1), float64(y2), float64(y2))
			fmt.Fprintf(&b, `<text class="edge-label" x="%.0f" y="%.0f">%s</text>`, lx, ly-4, esc(label))
		}
	}
	for _, name := range siteOrder {
		fmt.Fprintf(&b, `<g class="node site"><rect x="10" y="%d" width="%d" height="%d" rx="4"/><text x="20" y="%d">%s</text></g>`, sites[name].y, nodeW, nodeH, sites[name].y+20, esc(clipRunes(name, 34)))
	}
	for _, name := range toolOrder {
		cls := "node tool"
		title := ""
		if why, ok := never[name]; ok {
			cls, title = "node never", "<title>never called: "+esc(why)+"</title>"
		}
		fmt.Fprintf(&b, `<g class="%s">%s<rect x="%d" y="%d" width="%d" height="%d" rx="4"/><text x="%d" y="%d">%s</text></g>`, cls, title, x2, tools[name].y, nodeW, nodeH, x2+10, tools[name].y+20, esc(clipRunes(name, 34)))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// bezier is a cubic Bézier curve's coordinate at t, from its four points'.
func bezier(t, p0, p1, p2, p3 float64) float64 {
	u := 1 - t
	return u*u*u*p0 + 3*u*u*t*p1 + 3*u*t*t*p2 + t*t*t*p3
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
