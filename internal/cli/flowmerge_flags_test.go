package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestNewCmdFlowMerge(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want flowMergeOptions
	}{
		{"every flag", []string{"a.json", "b.json", "c.json", "--out", "m.json", "-q"}, flowMergeOptions{Files: []string{"a.json", "b.json", "c.json"}, Out: "m.json", Quiet: true}},
		{"-o -", []string{"a.json", "-o", "-"}, flowMergeOptions{Files: []string{"a.json"}, Out: "-"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseCmd(t, newCmdFlowMerge, tc.args...)
			if diff := cmp.Diff(tc.want, *got, cmpopts.IgnoreFields(flowMergeOptions{}, "IO")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
