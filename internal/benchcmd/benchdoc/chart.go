package main

import (
	"cmp"
	"fmt"
	"html"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/hoist-mcp/hoist/internal/benchcmd/results"
)

const (
	met    = "#3a7d44"
	missed = "#d9822b"
	ink    = "#222"
	faint  = "#999"
)

var palette = []string{"#3b6ea5", "#b5485d", "#6a8f3a", "#8a5fb0", "#c08a2e"}

func chart(t table) string {
	if t.scaled() {
		return lineChart(t)
	}
	return barChart(t)
}

// barChart draws a horizontal bar per row, the target as a dashed line.
func barChart(t table) string {
	const (
		labelW = 300
		plotW  = 420
		rowH   = 28
		top    = 40
	)
	top_ := 0.0
	for _, r := range t.rows {
		top_ = max(top_, r.Value, r.Hi, r.Target)
	}
	if top_ == 0 {
		top_ = 1
	}
	top_ *= 1.08
	x := func(v float64) float64 { return labelW + plotW*v/top_ }
	h := top + rowH*len(t.rows) + 24
	w := labelW + plotW + 110
	var b strings.Builder
	head(&b, t.name, w, h)
	for i, r := range t.rows {
		y := float64(top + i*rowH)
		color := met
		if !r.Met() {
			color = missed
		}
		if r.Target == 0 {
			color = palette[0]
		}
		fmt.Fprintf(&b, `<text x="%d" y="%.0f" text-anchor="end" font-size="12" fill="%s">%s</text>`, labelW-8, y+15, ink, esc(r.Row))
		fmt.Fprintf(&b, `<rect x="%d" y="%.0f" width="%.1f" height="18" fill="%s"><title>%s: %s</title></rect>`, labelW, y+2, x(r.Value)-labelW, color, esc(r.Row), esc(num(r.Value, r.Unit)))
		if r.Lo != 0 || r.Hi != 0 {
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f" stroke="%s" stroke-width="1.5"/>`, x(r.Lo), x(r.Hi), y+11, y+11, ink)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" font-size="12" fill="%s">%s</text>`, max(x(r.Value), x(r.Hi))+6, y+15, ink, esc(num(r.Value, r.Unit)))
	}
	targets(&b, t.rows, func(v float64) (float64, float64, float64, float64) {
		return x(v), float64(top - 6), x(v), float64(top + rowH*len(t.rows))
	})
	b.WriteString(`</svg>`)
	return b.String()
}

// lineChart draws a line per series over the rows' scale (logarithmic when
// the scale spans more than twenty times), the target as a dashed line.
func lineChart(t table) string {
	const (
		left  = 80
		plotW = 480
		plotH = 240
		top   = 40
	)
	var series []string
	lo, hi, yTop := math.Inf(1), math.Inf(-1), 0.0
	rows := slices.Clone(t.rows)
	slices.SortStableFunc(rows, func(a, b results.Row) int { return cmp.Compare(a.Scale, b.Scale) })
	t.rows = rows
	for _, r := range t.rows {
		if !slices.Contains(series, r.Series) {
			series = append(series, r.Series)
		}
		lo, hi = min(lo, r.Scale), max(hi, r.Scale)
		yTop = max(yTop, r.Value, r.Hi, r.Target)
	}
	// The legend is as wide as its longest name (about 7 px a character
	// at 12 px), so that no name is cut off at the picture's edge.
	legend := 160
	for _, s := range series {
		legend = max(legend, 44+7*len([]rune(s)))
	}
	ticks := niceTicks(yTop * 1.05)
	yTop = ticks[len(ticks)-1]
	logX := hi/lo > 20
	pos := func(s float64) float64 {
		if hi == lo {
			return 0.5
		}
		if logX {
			return (math.Log(s) - math.Log(lo)) / (math.Log(hi) - math.Log(lo))
		}
		return (s - lo) / (hi - lo)
	}
	x := func(s float64) float64 { return left + 20 + (plotW-40)*pos(s) }
	y := func(v float64) float64 { return top + plotH - plotH*v/yTop }
	w, h := left+plotW+legend, top+plotH+50
	var b strings.Builder
	head(&b, t.name, w, h)
	unit := t.rows[0].Unit
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s"/>`, left, top+plotH, left+plotW, top+plotH, faint)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s"/>`, left, top, left, top+plotH, faint)
	for _, v := range ticks {
		fmt.Fprintf(&b, `<text x="%d" y="%.0f" text-anchor="end" font-size="11" fill="%s">%s</text>`, left-6, y(v)+4, faint, esc(tick(v, unit)))
		if v > 0 {
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`, left+1, y(v), left+plotW, y(v))
		}
	}
	var scales []float64
	for _, r := range t.rows {
		if !slices.Contains(scales, r.Scale) {
			scales = append(scales, r.Scale)
		}
	}
	for _, s := range scales {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" font-size="11" fill="%s">%s</text>`, x(s), top+plotH+16, faint, esc(tick(s, "")))
	}
	if xl := t.rows[0].XLabel; xl != "" {
		scale := ""
		if logX {
			scale = " (logarithmic)"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-size="12" fill="%s">%s%s</text>`, left+plotW/2, top+plotH+36, ink, esc(xl), scale)
	}
	for i, s := range series {
		color := palette[i%len(palette)]
		var pts []string
		for _, r := range t.rows {
			if r.Series != s {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(r.Scale), y(r.Value)))
			dot := color
			if !r.Met() {
				dot = missed
			}
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"><title>%s: %s</title></circle>`, x(r.Scale), y(r.Value), dot, esc(r.Row), esc(num(r.Value, r.Unit)))
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" fill="%s">%s</text>`, x(r.Scale)+6, y(r.Value)-6, ink, esc(num(r.Value, r.Unit)))
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`, strings.Join(pts, " "), color)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d" font-size="12" fill="%s">%s</text>`, left+plotW+16, top+i*20, color, left+plotW+34, top+i*20+11, ink, esc(s))
	}
	targets(&b, t.rows, func(v float64) (float64, float64, float64, float64) {
		return left, y(v), left + plotW, y(v)
	})
	b.WriteString(`</svg>`)
	return b.String()
}

// targets draws each distinct target once, as a dashed line from at.
func targets(b *strings.Builder, rows []results.Row, at func(float64) (x1, y1, x2, y2 float64)) {
	var seen []float64
	for _, r := range rows {
		if r.Target == 0 || slices.Contains(seen, r.Target) {
			continue
		}
		seen = append(seen, r.Target)
		x1, y1, x2, y2 := at(r.Target)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="5,4" stroke-width="1.5"><title>target %s</title></line>`, x1, y1, x2, y2, ink, esc(num(r.Target, r.Unit)))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="end" fill="%s">target %s</text>`, x2, y1-4, ink, esc(num(r.Target, r.Unit)))
	}
}

func head(b *strings.Builder, title string, w, h int) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" role="img" aria-label="%s">`, w, h, w, h, esc(title))
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="#fff"/>`, w, h)
	fmt.Fprintf(b, `<text x="12" y="22" font-size="14" font-weight="bold" fill="%s">%s</text>`, ink, esc(title))
}

func esc(s string) string { return html.EscapeString(s) }

// niceTicks returns 0 and the multiples of a round step (1, 2 or 5 times
// a power of ten) up to the first at or past top: four to six ticks.
func niceTicks(top float64) []float64 {
	if top <= 0 {
		top = 1
	}
	raw := top / 4
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	ticks := []float64{0}
	for v := step; ; v += step {
		ticks = append(ticks, v)
		if v >= top-1e-9 {
			return ticks
		}
	}
}

// tick prints an axis value: as short as it reads exactly.
func tick(v float64, unit string) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if v >= 10000 {
		s = group3(fmt.Sprintf("%.0f", v))
	}
	if unit == "×" {
		return s + "×"
	}
	if unit == "" {
		return s
	}
	return s + " " + unit
}
