package proxy_test

import "testing"

// TestServeFlowExploreSeed: without --flow-explore-seed each session draws
// from a seed of its own, which its flow log names on every decision, so
// that two sessions explore differently and either can be replayed; with
// it, the seed given.
func TestServeFlowExploreSeed(t *testing.T) {
	seeds := func(args ...string) map[uint64]bool {
		p, dir := served(t, nil, append([]string{"--flow-explore", "0.5"}, args...)...)
		for i := 0; i < 3; i++ {
			p.send(call(10+i, `{"text":"a","next":"n`+itoa(i)+`"}`))
			p.readLine()
		}
		p.finish()
		d, _ := flowLog(t, dir)
		out := map[uint64]bool{}
		for _, x := range d {
			if x.Seed == nil {
				t.Fatalf("an exploring decision does not name its seed: %+v", x)
			}
			out[*x.Seed] = true
		}
		if len(out) != 1 {
			t.Fatalf("one session logged the seeds %v", out)
		}
		return out
	}
	a, b := seeds(), seeds()
	for s := range a {
		if b[s] {
			t.Errorf("two sessions without --flow-explore-seed drew from the same seed %d", s)
		}
	}
	if got := seeds("--flow-explore-seed", "7"); !got[7] {
		t.Errorf("--flow-explore-seed 7 logged the seed %v", got)
	}
}
