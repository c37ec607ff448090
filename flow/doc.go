// Package flow is hoist's flow: the IR a flow file holds (versioned JSON with
// a JSON Schema, docs/flow.md), the binding expressions that say where each
// argument of a lookup comes from, the deciders (reach, habit) and the rule
// that serves a flow (threshold, greedy choice, ε-exploration with
// propensities), and the run record with its sites and surprise, which
// Rescore reproduces from a logged trace (issue 4, points 1 and 4;
// docs/flow-run.md).
package flow
