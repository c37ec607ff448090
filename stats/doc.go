// Package stats holds the numerics of hoist's analysis commands as pure
// functions over slices, in the manner of gonum's stat package: each
// function's doc comment gives its formula, randomness comes from an
// injected *rand.Rand, and nothing here reads a store or a log.
//
// Intervals: [Bootstrap] and [BootstrapVec] (percentile bootstrap over
// sampling units, the cluster bootstrap of docs/ope.md §8.2),
// [BootstrapBCa] (bias-corrected and accelerated, for skewed statistics
// such as importance-weighted means) and [Wilson] (a proportion). Lower
// bounds of a mean: [MeanLower] (one look, fixed n) and [BettingLower] (a
// confidence sequence, valid however often it is looked at). Tests:
// [TwoProportionZ]. Off-policy estimators (docs/ope.md §2–§7): [IPS],
// [SNIPS], [DR], [ESS], [Clip].
package stats
