package main

import "testing"

// TestRun keeps the benchmark working on a few sessions.
func TestRun(t *testing.T) {
	if err := run(200, 20, 1); err != nil {
		t.Fatal(err)
	}
}
