package flow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Arbiter combines what a flow counts about an offer into one probability:
// that the agent makes this very call itself before its next write (a hit).
// It is a logistic regression over the offer's inputs (ArbiterInputs),
//
//	P(hit) = σ(Σᵢ wᵢ xᵢ),   σ(z) = 1 / (1 + e⁻ᶻ)
//
// fitted by hoist learn on held-out offers: each training episode is
// replayed with its own task's fold left out of the counts (the audit's
// replay), every offer labelled hit or not. So P(hit) is calibrated where
// reach and habit are not: a fan-out's, a conversation's and a predicate's
// offers are weighed by how often such offers hit, not by how often the
// tool was used. Weights are kept for every fold (Folds[f], fitted without
// fold f's offers), so a task is never served an arbiter fitted on itself.
//
// The inputs are named (Features), so that another probability can join
// the combination with a weight of its own: the System-One model's answer
// ("oracle", issue 11) is one the arbiter reads when it is given
// (ArbiterInputs.Oracle) and the flow has a weight for it.
type Arbiter struct {
	// Features names the inputs, in the order of the weights.
	Features []string `json:"features"`
	// Weights are fitted on the offers of every fold.
	Weights []float64 `json:"weights"`
	// Folds are the weights fitted without each fold's offers; absent
	// without folds.
	Folds [][]float64 `json:"folds,omitempty"`
	// Fit says what the weights were fitted on and how well they are
	// calibrated out of fold.
	Fit ArbiterFit `json:"fit"`
	// HeldOut is what the fit's held-out replay saw of each lookup's
	// offers, by site and lookup, sorted: a lookup whose rate is below
	// the threshold is not offered (HeldOut.Rate).
	HeldOut []HeldOut `json:"held_out,omitempty"`

	none bool // read from version 1's "arbiter": false
}

// ArbiterFit describes an arbiter's fit: the offers and hits it was fitted
// on, and, out of fold (each offer predicted by the weights fitted without
// its fold), the expected calibration error over ten equal-width bins and
// the mean log loss in nats.
type ArbiterFit struct {
	Offers  int     `json:"offers"`
	Hits    int     `json:"hits"`
	ECE     float64 `json:"ece"`
	LogLoss float64 `json:"log_loss"`
	// ECEBand is the ECE of the offers predicted 0.2 to 0.5 only (BandECE),
	// around the threshold, where a miscalibration moves decisions; absent
	// when none was.
	ECEBand float64 `json:"ece_band,omitempty"`
}

// UnmarshalJSON reads an arbiter, or version 1's false (none).
func (a *Arbiter) UnmarshalJSON(b []byte) error {
	switch t := string(bytes.TrimSpace(b)); t {
	case "false", "null":
		*a = Arbiter{none: true}
		return nil
	case "true":
		return errors.New("arbiter: true, without its weights: want an object")
	}
	type plain Arbiter
	var p plain
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("arbiter: %w", err)
	}
	*a = Arbiter(p)
	return nil
}

// The arbiter's inputs, by name.
const (
	FeatureBias    = "bias"    // 1
	FeatureReach   = "reach"   // logit P(reach)
	FeatureHabit   = "habit"   // logit P(habit)
	FeatureBinding = "binding" // logit P(binding matched)
	FeatureWhen    = "when"    // logit P(reach | the predicate's outcome) − logit P(reach); 0 without a predicate
	FeatureFan     = "fan"     // 1 for a fan-out over a list (not one the customer named)
	FeatureSaid    = "said"    // 1 for a binding that reads the conversation
	FeatureOracle  = "oracle"  // logit of the System-One model's answer, when it gave one; 0 otherwise
)

// ArbiterFeatures are the inputs learn fits, in order. FeatureOracle joins
// them, last, when learn is given an oracle (hoist learn --oracle), whose
// answers it asks for every training offer (issue 11).
var ArbiterFeatures = []string{FeatureBias, FeatureReach, FeatureHabit, FeatureBinding, FeatureWhen, FeatureFan, FeatureSaid}

var knownFeatures = append(slices.Clone(ArbiterFeatures), FeatureOracle)

// ArbiterInputs are what the arbiter combines for one offer.
type ArbiterInputs struct {
	PReach, PHabit, PBinding float64
	// PWhen is P(reach) given the predicate's outcome; 0 without one.
	PWhen float64
	// FanOut and Said say what the binding is: a fan-out over a list, or
	// one that reads the conversation.
	FanOut, Said bool
	// Oracle is the System-One model's probability that the lookup will
	// be used (the offer's POracle), NaN when it gave none: no oracle, no
	// key, a replay miss, the budget spent, an error. Its input is then 0,
	// so its weight plays no part.
	Oracle float64
}

// InputsOf returns an offer's arbiter inputs, from what its decision line
// logs, so that a logged offer is scored again exactly as it was served.
func InputsOf(o *Offer) ArbiterInputs {
	in := ArbiterInputs{PReach: o.PReach, PHabit: o.PHabit, PBinding: o.PBinding, PWhen: o.PWhen, Oracle: oracleInput(o)}
	for _, e := range o.Binding {
		if strings.Contains(e, "$said") || strings.Contains(e, "[said") {
			in.Said = true
		} else if strings.Contains(e, "[*]") {
			in.FanOut = true
		}
	}
	if in.Said {
		in.FanOut = false
	}
	return in
}

// logitClip bounds probabilities away from 0 and 1, where counts of a few
// occurrences would give an infinite logit.
const logitClip = 0.005

func logit(p float64) float64 {
	p = min(max(p, logitClip), 1-logitClip)
	return math.Log(p / (1 - p))
}

// Vector returns the inputs as the values of features, in order.
func (in ArbiterInputs) Vector(features []string, x []float64) []float64 {
	x = x[:0]
	for _, name := range features {
		v := 0.0
		switch name {
		case FeatureBias:
			v = 1
		case FeatureReach:
			v = logit(in.PReach)
		case FeatureHabit:
			v = logit(in.PHabit)
		case FeatureBinding:
			v = logit(in.PBinding)
		case FeatureWhen:
			if in.PWhen > 0 {
				v = logit(in.PWhen) - logit(in.PReach)
			}
		case FeatureFan:
			if in.FanOut {
				v = 1
			}
		case FeatureSaid:
			if in.Said {
				v = 1
			}
		case FeatureOracle:
			if !math.IsNaN(in.Oracle) {
				v = logit(in.Oracle)
			}
		}
		x = append(x, v)
	}
	return x
}

// Weights returns the weights that serve fold f: those fitted without it,
// or all of them (f < 0, or no folds).
func (a *Arbiter) weights(f int) []float64 {
	if f >= 0 && f < len(a.Folds) {
		return a.Folds[f]
	}
	return a.Weights
}

// P returns the arbiter's probability of a hit for an offer's inputs,
// served to fold f.
func (a *Arbiter) P(in ArbiterInputs, f int) float64 {
	w := a.weights(f)
	z := 0.0
	var buf [16]float64
	x := in.Vector(a.Features, buf[:0])
	for i := range x {
		z += w[i] * x[i]
	}
	return Sigmoid(z)
}

// Sigmoid is 1 / (1 + e⁻ᶻ), computed without overflow.
func Sigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

// validate checks the arbiter's shape: known features, and weights for
// each, in total and per fold.
func (a *Arbiter) validate(k int) error {
	bad := func(field, format string, args ...any) error {
		return &FieldError{Field: "arbiter." + field, Err: fmt.Errorf(format, args...)}
	}
	if len(a.Features) == 0 {
		return bad("features", "empty")
	}
	for i, name := range a.Features {
		if !slices.Contains(knownFeatures, name) {
			return bad(fmt.Sprintf("features[%d]", i), "%q: want one of %s", name, strings.Join(knownFeatures, ", "))
		}
		if slices.Index(a.Features, name) != i {
			return bad(fmt.Sprintf("features[%d]", i), "%q repeated", name)
		}
	}
	finite := func(field string, w []float64) error {
		if len(w) != len(a.Features) {
			return bad(field, "%d weights for %d features", len(w), len(a.Features))
		}
		for i, x := range w {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return bad(fmt.Sprintf("%s[%d]", field, i), "not a finite number")
			}
		}
		return nil
	}
	if err := finite("weights", a.Weights); err != nil {
		return err
	}
	if len(a.Folds) != 0 && (k <= 1 || len(a.Folds) != k) {
		return bad("folds", "%d folds of weights, want %d", len(a.Folds), k)
	}
	for f, w := range a.Folds {
		if err := finite(fmt.Sprintf("folds[%d]", f), w); err != nil {
			return err
		}
	}
	return nil
}
