//go:build race

package evaluate

// raceEnabled says the tests run under the race detector, which makes the
// bootstrap's loops some fifteen times slower.
const raceEnabled = true
