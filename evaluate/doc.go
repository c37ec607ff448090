// Package evaluate estimates, off-policy, what other decision rules would
// have earned in sessions a flow was served (or shadowed) in with
// exploration (hoist-mcp --flow-explore): IPS, SNIPS and doubly robust
// estimates with clipping, their diagnostics, and BCa bootstrap intervals
// over sessions (issue 6, point 4; issue 18; docs/ope.md;
// docs/evaluate.md).
//
// The unit of estimation is the session: the value of a rule is the
// expected reward of a session under it. A session's decisions depend on
// one another across its runs (a lookup taken is not offered again until a
// write, the session's lookup cap spans its runs, and a served lookup
// changes what the agent does next), so each decision's reward is weighted
// by the product of the probability ratios of every decision of its
// session made before that reward was settled, and sessions, not runs, are
// resampled by the bootstrap.
//
// The reward (Reward) is defined once, here: hoist promote scores its
// shadow runs through Score, so both commands judge a lookup alike. The
// package reads sessions through [Source], never the store.
package evaluate
