package proccli

import (
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want options
	}{
		{"flags first", []string{"--think", "0", "--json", "--param", "email=a@b", "f.jsonl", "--", "srv", "--think", "1s"},
			options{file: "f.jsonl", command: []string{"srv", "--think", "1s"}, params: map[string]string{"email": "a@b"}, think: 0, json: true}},
		{"flags after the file", []string{"f.jsonl", "--param", "a=1", "--param", "b=x=y", "--", "srv"},
			options{file: "f.jsonl", command: []string{"srv"}, params: map[string]string{"a": "1", "b": "x=y"}, think: -1}},
		{"defaults", []string{"f.jsonl", "--", "srv", "--", "child"},
			options{file: "f.jsonl", command: []string{"srv", "--", "child"}, params: map[string]string{}, think: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, code, err := parseArgs(tc.args, io.Discard)
			if err != nil || code >= 0 {
				t.Fatalf("code %d, err %v", code, err)
			}
			tc.want.timeout, tc.want.stopGrace = 30*time.Second, 5*time.Second
			if diff := cmp.Diff(tc.want, *got, cmp.AllowUnexported(options{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	for _, args := range [][]string{{"--timeout", "0", "f", "--", "s"}, {"--stop-grace", "-1s", "f", "--", "s"}, {"--think", "soon", "f", "--", "s"}} {
		if _, _, err := parseArgs(args, io.Discard); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}
