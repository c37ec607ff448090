package flow

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// checkSchema validates v against the subset of JSON Schema flow.schema.json
// uses: type, const, enum, required, properties, additionalProperties,
// items, minimum, maximum, minLength, pattern and local $ref.
func checkSchema(root, s map[string]any, v any, path string) error {
	if ref, ok := s["$ref"].(string); ok {
		def := root["$defs"].(map[string]any)[strings.TrimPrefix(ref, "#/$defs/")]
		if def == nil {
			return fmt.Errorf("%s: unknown $ref %s", path, ref)
		}
		return checkSchema(root, def.(map[string]any), v, path)
	}
	if alts, ok := s["anyOf"].([]any); ok {
		var errs []string
		for _, alt := range alts {
			err := checkSchema(root, alt.(map[string]any), v, path)
			if err == nil {
				return nil
			}
			errs = append(errs, err.Error())
		}
		return fmt.Errorf("%s: none of anyOf: %s", path, strings.Join(errs, "; "))
	}
	if c, ok := s["const"]; ok && fmt.Sprint(c) != fmt.Sprint(v) {
		return fmt.Errorf("%s: %v, want %v", path, v, c)
	}
	if e, ok := s["enum"].([]any); ok {
		found := false
		for _, x := range e {
			found = found || x == v
		}
		if !found {
			return fmt.Errorf("%s: %v not in %v", path, v, e)
		}
	}
	switch s["type"] {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: not an object", path)
		}
		for _, r := range asSlice(s["required"]) {
			if _, ok := m[r.(string)]; !ok {
				return fmt.Errorf("%s: missing %s", path, r)
			}
		}
		props, _ := s["properties"].(map[string]any)
		for k, x := range m {
			if ps, ok := props[k]; ok {
				if err := checkSchema(root, ps.(map[string]any), x, path+"."+k); err != nil {
					return err
				}
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					return fmt.Errorf("%s: unexpected member %s", path, k)
				}
			case map[string]any:
				if err := checkSchema(root, ap, x, path+"."+k); err != nil {
					return err
				}
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: not an array", path)
		}
		if is, ok := s["items"].(map[string]any); ok {
			for i, x := range a {
				if err := checkSchema(root, is, x, fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: not a string", path)
		}
		if n, ok := s["minLength"].(float64); ok && float64(len(str)) < n {
			return fmt.Errorf("%s: shorter than %v", path, n)
		}
		if p, ok := s["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(str) {
			return fmt.Errorf("%s: %q does not match %s", path, str, p)
		}
	case "integer":
		n, ok := v.(float64)
		if !ok || n != float64(int64(n)) {
			return fmt.Errorf("%s: not an integer", path)
		}
		if m, ok := s["minimum"].(float64); ok && n < m {
			return fmt.Errorf("%s: below %v", path, m)
		}
		if m, ok := s["maximum"].(float64); ok && n > m {
			return fmt.Errorf("%s: above %v", path, m)
		}
	case "number":
		if _, ok := v.(float64); !ok {
			return fmt.Errorf("%s: not a number", path)
		}
		if m, ok := s["minimum"].(float64); ok && v.(float64) < m {
			return fmt.Errorf("%s: below %v", path, m)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: not a boolean", path)
		}
	}
	return nil
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

func validateSchema(t *testing.T, data []byte) error {
	t.Helper()
	var root, v map[string]any
	if err := json.Unmarshal(Schema, &root); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return checkSchema(root, root, v, "$")
}

func TestSchemaAcceptsFlows(t *testing.T) {
	data, _ := shopFlow(t).Marshal()
	if err := validateSchema(t, data); err != nil {
		t.Errorf("shop flow: %v", err)
	}
	data, _ = cueFlow(t, 20).Marshal()
	if err := validateSchema(t, data); err != nil {
		t.Errorf("shop flow with cues: %v", err)
	}
	af := cueFlow(t, 20)
	af.Learned.AgentWords = true
	for li := range af.Sites[len(af.Sites)-1].Lookups {
		for ci := range af.Sites[len(af.Sites)-1].Lookups[li].Cues {
			af.Sites[len(af.Sites)-1].Lookups[li].Cues[ci].By = CueByAgent
		}
	}
	data, _ = af.Marshal()
	if !strings.Contains(string(data), `"by": "agent"`) || !strings.Contains(string(data), `"agent_words": true`) {
		t.Fatalf("the agent's cue not written: %s", data)
	}
	if err := validateSchema(t, data); err != nil {
		t.Errorf("shop flow with the agent's cues: %v", err)
	}
	goldens, _ := filepath.Glob(filepath.Join("..", "learn", "testdata", "*.flow.json"))
	// Version 1 flows, which the schema describes too.
	goldens = append(goldens, filepath.Join("..", "testdata", "flows", "tau2-retail.flow.json"))
	if len(goldens) == 0 {
		t.Fatal("no golden flows")
	}
	for _, g := range goldens {
		data, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		if err := validateSchema(t, data); err != nil {
			t.Errorf("%s: %v", g, err)
		}
	}
}

func TestSchemaAndParseRefuse(t *testing.T) {
	good, _ := shopFlow(t).Marshal()
	for _, tc := range []struct{ name, from, to, parse string }{
		{"unknown member", `"domain"`, `"colour": 1, "domain"`, "unknown field"},
		{"bad kind", `"write"`, `"maybe"`, "tools.cancel.kind"},
		{"bad binding", `"$text"`, `"$txt"`, "unknown root"},
		{"version", `"hoist_flow": 2`, `"hoist_flow": 3`, "version 3"},
		{"version 0", `"hoist_flow": 2`, `"hoist_flow": 0`, "version 0"},
	} {
		bad := []byte(strings.Replace(string(good), tc.from, tc.to, 1))
		if string(bad) == string(good) {
			t.Fatalf("%s: %s not in the flow", tc.name, tc.from)
		}
		if tc.name != "bad binding" {
			if err := validateSchema(t, bad); err == nil {
				t.Errorf("%s: the schema accepts it", tc.name)
			}
		}
		_, err := Parse(bad, "x.flow.json")
		if err == nil || !strings.Contains(err.Error(), tc.parse) || !strings.HasPrefix(err.Error(), "x.flow.json: ") {
			t.Errorf("%s: Parse = %v, want x.flow.json: …%s…", tc.name, err, tc.parse)
		}
	}
	// What only Validate sees.
	f := shopFlow(t)
	f.Sites[0].Lookups = append([]Lookup{{Tool: "cancel"}}, f.Sites[0].Lookups...)
	if err := f.Validate(); err == nil || !strings.Contains(err.Error(), "only read tools") {
		t.Errorf("a write lookup validates: %v", err)
	}
	f = shopFlow(t)
	f.Sites[0], f.Sites[1] = f.Sites[1], f.Sites[0]
	if err := f.Validate(); err == nil || !strings.Contains(err.Error(), "not sorted") {
		t.Errorf("unsorted sites validate: %v", err)
	}
}

// FuzzParse: no flow file makes Parse panic, and a flow it accepts encodes
// to bytes it reads back to the same bytes.
func FuzzParse(f *testing.F) {
	good, _ := shopFlow(f).Marshal()
	f.Add(good)
	if g, err := os.ReadFile(filepath.Join("..", "learn", "testdata", "binding_forms.flow.json")); err == nil {
		f.Add(g)
	}
	f.Add([]byte(`{"hoist_flow":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, err := Parse(data, "fuzz.flow.json")
		if err != nil {
			return
		}
		a, err := fl.Marshal()
		if err != nil {
			t.Fatalf("a parsed flow does not encode: %v", err)
		}
		fl2, err := Parse(a, "again")
		if err != nil {
			t.Fatalf("an encoded flow does not parse: %v\n%s", err, a)
		}
		b, _ := fl2.Marshal()
		if string(a) != string(b) {
			t.Fatalf("not stable:\n%s\n%s", a, b)
		}
		// Serving it must not panic either.
		if s, err := NewSession(fl2, Options{Rule: Rule{Threshold: 0.1}}); err == nil {
			for _, site := range fl2.Sites {
				i := s.Call(fl2.BareName(site.Tool), json.RawMessage(`{"x":1}`))
				s.Result(i, `{"first":"a","orders":["b"],"x":[1,2]}`, site.Failed)
				run := s.Run(i)
				for k := 0; k < 10 && run.Next().Taken >= 0; k++ {
					run.Answer(`{}`, false)
				}
				run.End()
			}
		}
	})
}
