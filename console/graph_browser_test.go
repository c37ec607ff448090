package console_test

import (
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// labelClash is a script that measures the flow graph's labels as the
// browser drew them and returns the first pair whose boxes overlap or
// label that leaves the viewBox, or "".
const labelClash = `(() => {
  const svg = document.querySelector('svg.graph');
  const vb = svg.viewBox.baseVal;
  const bs = [...svg.querySelectorAll('text')].map(t => [t.textContent, t.getBBox()]);
  for (let i = 0; i < bs.length; i++) {
    const [s, a] = bs[i];
    if (a.x < vb.x || a.y < vb.y || a.x + a.width > vb.x + vb.width || a.y + a.height > vb.y + vb.height)
      return 'label ' + JSON.stringify(s) + ' leaves the viewBox';
    for (let j = i + 1; j < bs.length; j++) {
      const [r, b] = bs[j];
      if (a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height)
        return 'labels ' + JSON.stringify(s) + ' and ' + JSON.stringify(r) + ' overlap';
    }
  }
  return '';
})()`

// TestFlowGraphInBrowser shows the flow learned from τ² retail, the
// busiest in testdata, and checks with the boxes Chromium drew that its
// graph's labels neither overlap nor leave it.
func TestFlowGraphInBrowser(t *testing.T) {
	ctx := browser(t)
	addr := startConsole(t, "--sessions", t.TempDir(), "--flow", filepath.Join("..", "testdata", "flows", "tau2-retail.flow.json"))
	var clash string
	var labels int
	within(t, ctx, "the τ² retail flow's page",
		chromedp.Navigate("http://"+addr+"/flow?name=tau2-retail.flow"),
		visible(`svg.graph`),
		eval(count(`svg.graph text.edge-label`), &labels),
		eval(labelClash, &clash),
	)
	if labels < 20 {
		t.Errorf("%d edge labels; want the τ² flow's many candidate lookups", labels)
	}
	if clash != "" {
		t.Error(clash)
	}
	shoot(t, ctx, "flow-tau2")
}
