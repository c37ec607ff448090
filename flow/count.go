package flow

// The one count of a flow's sites and lookups (issue 24, item 4): hoist
// learn's summary, hoist flow-show and the console's flow page all count
// what the flow would do as hoist-mcp serves it, so they agree.

// ServedRule returns rule as hoist-mcp serves f with it: a rule that names
// no decider gets the flow's default (its arbiter when it has one, else
// reach: DefaultDecider), and one with no threshold DefaultThreshold.
func ServedRule(f *Flow, rule Rule) Rule {
	if rule.Decider == "" {
		rule.Decider = f.DefaultDecider()
	}
	if rule.Threshold == 0 {
		rule.Threshold = DefaultThreshold
	}
	return rule
}

// SiteCounts are a flow's sites, the sites after which it looks something
// up, and the lookups it makes there, over all folds.
type SiteCounts struct {
	Sites    int `json:"sites"`
	SitesAct int `json:"sites_act"`
	Lookups  int `json:"lookups"`
}

// CountSites returns f's counts under rule as hoist-mcp serves it
// (ServedRule), over all folds: what every report of a flow says.
func CountSites(f *Flow, rule Rule) SiteCounts {
	rev := f.Review(ServedRule(f, rule), -1)
	return SiteCounts{Sites: len(f.Sites), SitesAct: rev.SitesAct, Lookups: rev.Lookups}
}
