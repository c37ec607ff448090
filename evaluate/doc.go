// Package evaluate estimates, off-policy, what other decision rules would
// have earned in sessions a flow was served (or shadowed) in with
// exploration (hoist-mcp --flow-explore): IPS, SNIPS and doubly robust
// estimates with clipping, their diagnostics, and bootstrap intervals over
// sessions (issue 6, point 4; docs/ope.md; docs/evaluate.md).
//
// The unit of estimation is a run: the decisions the flow made after one of
// the agent's calls returned, each taking a lookup or handing back (stop).
// A run's reward is the sum of its decisions' rewards (see [Reward]); the
// value of a rule is the expected reward of a run under it. A run's
// decisions are sequential (which lookups are offered at decide#1 depends on
// what decide#0 took), so a run is weighted by the product of its decisions'
// probability ratios (trajectory importance sampling, Precup, Sutton & Singh
// 2000), and sessions, not runs, are resampled by the bootstrap.
//
// The package reads sessions through [Source], never the store.
package evaluate
