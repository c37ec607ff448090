package console

import (
	"encoding/xml"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hoist-mcp/hoist/flow"
)

// A label's box, estimated from the font size the console's stylesheet
// gives the graph's text (12px, edge labels 11px): conservatively wide,
// 0.62em a character (system-ui averages under 0.55em), 0.8em above the
// baseline and 0.25em below.
type labelBox struct {
	text                   string
	left, right, top, bott float64
}

func (a labelBox) overlaps(b labelBox) bool {
	return a.left < b.right && b.left < a.right && a.top < b.bott && b.top < a.bott
}

func svgLabels(t *testing.T, svg string) (w, h float64, boxes []labelBox) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	var open *xml.StartElement
	inTitle := false // a tooltip is not drawn
	var content strings.Builder
	attr := func(e *xml.StartElement, name string) string {
		for _, a := range e.Attr {
			if a.Name.Local == name {
				return a.Value
			}
		}
		return ""
	}
	num := func(e *xml.StartElement, name string) float64 {
		f, err := strconv.ParseFloat(attr(e, name), 64)
		if err != nil {
			t.Fatalf("<%s %s=%q>: %v", e.Name.Local, name, attr(e, name), err)
		}
		return f
	}
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		switch e := tok.(type) {
		case xml.StartElement:
			switch e.Name.Local {
			case "svg":
				if _, err := fmt.Sscanf(attr(&e, "viewBox"), "0 0 %g %g", &w, &h); err != nil {
					t.Fatalf("viewBox %q: %v", attr(&e, "viewBox"), err)
				}
			case "title":
				inTitle = true
			case "text":
				e := e.Copy()
				open = &e
				content.Reset()
			}
		case xml.CharData:
			if open != nil && !inTitle {
				content.Write(e)
			}
		case xml.EndElement:
			if e.Name.Local == "title" {
				inTitle = false
			}
			if e.Name.Local != "text" || open == nil {
				continue
			}
			fs := 12.0
			if strings.Contains(attr(open, "class"), "edge-label") {
				fs = 11
			}
			s := content.String()
			width := 0.62 * fs * float64(utf8.RuneCountInString(s))
			x, y := num(open, "x"), num(open, "y")
			left := x
			switch attr(open, "text-anchor") {
			case "middle":
				left = x - width/2
			case "end":
				left = x - width
			}
			boxes = append(boxes, labelBox{s, left, left + width, y - 0.8*fs, y + 0.25*fs})
			open = nil
		}
	}
	if w == 0 || len(boxes) == 0 {
		t.Fatalf("no viewBox or no labels in %.200s", svg)
	}
	return w, h, boxes
}

// TestFlowGraphLabelsApart lays out the graph of the flow learned from τ²
// retail, as the console serves it, and of a flow whose names are longer
// than their boxes, and checks that no two labels overlap and none leaves
// the viewBox.
func TestFlowGraphLabelsApart(t *testing.T) {
	f, err := flow.Load(filepath.Join("..", "testdata", "flows", "tau2-retail.flow.json"))
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("very_long_tool_name_", 4)
	crowded := &flow.Review{Rule: flow.Rule{Decider: flow.Reach, Threshold: 0.3}, Never: []flow.ToolReview{{Tool: "never_" + long, Why: "a write"}}}
	for i := range 6 {
		s := flow.SiteReview{Tool: fmt.Sprintf("site_%d_%s", i, long), Failed: i%2 == 1}
		for j := range i {
			s.Lookups = append(s.Lookups, flow.LookupReview{Tool: fmt.Sprintf("tool_%d_%s", j, long), Act: j%2 == 0, Score: 0.5})
		}
		crowded.Sites = append(crowded.Sites, s)
	}
	for name, rev := range map[string]*flow.Review{
		"tau2 retail": f.Review(flow.ServedRule(f, flow.Rule{}), -1),
		"long names":  crowded,
	} {
		t.Run(name, func(t *testing.T) {
			w, h, boxes := svgLabels(t, string(flowGraph(rev)))
			bad := 0
			for i, a := range boxes {
				if a.left < 0 || a.top < 0 || a.right > w || a.bott > h {
					t.Errorf("label %q [%.0f,%.0f]×[%.0f,%.0f] leaves the viewBox 0 0 %.0f %.0f", a.text, a.left, a.right, a.top, a.bott, w, h)
				}
				for _, b := range boxes[i+1:] {
					if a.overlaps(b) {
						if bad++; bad <= 10 {
							t.Errorf("labels overlap: %q at [%.0f,%.0f]×[%.0f,%.0f] and %q at [%.0f,%.0f]×[%.0f,%.0f]", a.text, a.left, a.right, a.top, a.bott, b.text, b.left, b.right, b.top, b.bott)
						}
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d overlapping pairs of %d labels", bad, len(boxes))
			}
		})
	}
}
