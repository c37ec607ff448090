package flow

import (
	"encoding/json"
	"testing"
)

// BenchmarkDecision times the first decision after an agent's result on the
// shop flow: parse nothing more than the bindings need, bind, decide.
func BenchmarkDecision(b *testing.B) {
	f := shopFlow(b)
	args := json.RawMessage(`{"x":"c7@example.com"}`)
	text := `{"first":"i1","orders":["#a","#b","#c"],"profile":{"zip":"10001","name":"Ann"},"items":[{"id":1},{"id":2},{"id":3}]}`
	var s *Session
	n := 0
	for b.Loop() {
		if n%32 == 0 {
			s, _ = NewSession(f, Options{Rule: Rule{Threshold: 0.3}})
		}
		n++
		i := s.Call("get_user", args)
		s.Result(i, text, false)
		run := s.Run(i)
		run.Next()
	}
}
