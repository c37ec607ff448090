package flow

import "math"

// CalibrationBins is how many equal-width bins of probability a
// reliability table has.
const CalibrationBins = 10

// Bin is one row of a reliability table: the offers whose probability fell
// in [Lo, Hi), with their mean probability and the share of them that hit.
type Bin struct {
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
	Offers int     `json:"offers"`
	MeanP  float64 `json:"mean_p"`
	Hits   int     `json:"hits"`
	Rate   float64 `json:"hit_rate"`
}

// Reliability sorts probabilities and their outcomes into CalibrationBins
// bins and returns them, with the expected calibration error: the mean,
// weighted by offers, of each bin's |mean probability − hit rate|. It is
// what learn reports of the arbiter's out-of-fold fit and hoist audit
// --calibration of any decider on held-out sessions, so both measure it
// the same way.
func Reliability(ps []float64, hits []bool) (bins []Bin, ece float64) {
	bins = make([]Bin, CalibrationBins)
	sum := make([]float64, CalibrationBins)
	for i := range bins {
		bins[i].Lo = float64(i) / CalibrationBins
		bins[i].Hi = float64(i+1) / CalibrationBins
	}
	for i, p := range ps {
		if math.IsNaN(p) {
			continue
		}
		b := min(max(int(p*CalibrationBins), 0), CalibrationBins-1)
		bins[b].Offers++
		sum[b] += p
		if hits[i] {
			bins[b].Hits++
		}
	}
	n := 0
	for i := range bins {
		n += bins[i].Offers
	}
	for i := range bins {
		b := &bins[i]
		if b.Offers == 0 {
			continue
		}
		b.MeanP = sum[i] / float64(b.Offers)
		b.Rate = float64(b.Hits) / float64(b.Offers)
		ece += float64(b.Offers) / float64(n) * math.Abs(b.MeanP-b.Rate)
	}
	return bins, ece
}

// BandECE is the expected calibration error of the probabilities in
// [lo, hi) only: Reliability's bins of width 0.1 that fall in the band,
// weighted by their offers. Around the threshold is where a
// miscalibration moves decisions; an ECE over every offer is mostly the
// many offers far below it.
func BandECE(ps []float64, hits []bool, lo, hi float64) float64 {
	bins, _ := Reliability(ps, hits)
	n, e := 0, 0.0
	for _, b := range bins {
		if b.Offers == 0 || b.Lo < lo-1e-9 || b.Hi > hi+1e-9 {
			continue
		}
		n += b.Offers
		e += float64(b.Offers) * math.Abs(b.MeanP-b.Rate)
	}
	if n == 0 {
		return 0
	}
	return e / float64(n)
}

// OfferOnce reports each offer of a run once, at the first decision that
// offers it: a run's later decisions offer again what its earlier ones
// passed over, and a reliability table counts an offer once. Feed it every
// decision of a replay in order (ReplayOptions.Decision).
type OfferOnce struct {
	seen map[string]bool
}

// Each calls fn with each of d's offers not offered before in its run, and
// whether it hit.
func (u *OfferOnce) Each(d *Decision, hit []bool, fn func(o *Offer, hit bool)) {
	if u.seen == nil {
		u.seen = map[string]bool{}
	}
	if d.Site == "decide#0" {
		clear(u.seen)
	}
	for i := range d.Offers {
		o := &d.Offers[i]
		lb := o.Label()
		if u.seen[lb] {
			continue
		}
		u.seen[lb] = true
		fn(o, hit[i])
	}
}
