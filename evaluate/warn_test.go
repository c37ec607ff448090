package evaluate

import (
	"strings"
	"testing"
)

// A rule whose mean importance weight is far from 1 is flagged (issue 24,
// item 3): at 0.135 the logs rarely did what it does.
func TestWarnsOfMeanWeight(t *testing.T) {
	for _, c := range []struct {
		mean float64
		warn bool
	}{{0.135, true}, {0.9, false}, {1.2, false}, {3, true}} {
		d := Diagnostics{N: 200, Support: 150, ESS: 120, ESSShare: 0.6, MaxShare: 0.01, MeanWeight: Num(c.mean)}
		got := strings.Join(warnings(d), "; ")
		if strings.Contains(got, "mean importance weight") != c.warn {
			t.Errorf("mean weight %v: warnings %q, want a warning %v", c.mean, got, c.warn)
		}
	}
	if got := strings.Join(warnings(Diagnostics{N: 200, Support: 150, ESS: 120, ESSShare: 0.6, MeanWeight: 0.135}), "; "); !strings.Contains(got, "0.135 is far from 1") {
		t.Errorf("warnings %q: want the mean weight named", got)
	}
}
