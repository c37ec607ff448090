package guards

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
)

// The airline rules, from τ²-bench's airline policy
// (../shared/data/tau2/policies/airline.md). Their facts are records the
// airline tools answer with: users (get_user_details: membership, payment
// methods, reservations), reservations (get_reservation_details, and every
// write on one, which answers with the reservation as it is after) and
// flight statuses (get_flight_status). Times are the policy's clock
// (Config.Now, by default AirlineNow).

// airlineWrites are the airline tools that change the database.
var airlineWrites = map[string]bool{
	"book_reservation":              true,
	"cancel_reservation":            true,
	"send_certificate":              true,
	"update_reservation_baggages":   true,
	"update_reservation_flights":    true,
	"update_reservation_passengers": true,
}

var airlineRules = []*Rule{
	{
		ID:      "airline.cancel_eligibility",
		Policy:  "A reservation is cancelled only if none of its flights has flown and it was booked within 24 hours, or the airline cancelled a flight, or it is business class, or its travel insurance covers the reason (health or weather).",
		Tools:   []string{"cancel_reservation"},
		Facts:   []string{"the reservation (booking time, cabin, flights, insurance)", "the flights' statuses the agent was shown (cancelled, landed, flying)", "the customer's reason (--context), with insurance"},
		Default: Enforce,
		check:   airlineCancelEligibility,
	},
	{
		ID:      "airline.basic_economy",
		Policy:  "The flights of a basic economy reservation cannot be changed (its cabin can).",
		Tools:   []string{"update_reservation_flights"},
		Facts:   []string{"the reservation's cabin and flights"},
		Default: Enforce,
		check:   airlineBasicEconomy,
	},
	{
		ID:      "airline.cabin",
		Policy:  "A reservation's cabin cannot change once any of its flights has flown.",
		Tools:   []string{"update_reservation_flights"},
		Facts:   []string{"the reservation's cabin and flights"},
		Default: Enforce,
		check:   airlineCabin,
	},
	{
		ID:      "airline.passenger_count",
		Policy:  "A reservation has at most five passengers, and their number never changes after booking.",
		Tools:   []string{"book_reservation", "update_reservation_passengers"},
		Facts:   []string{"the reservation's passengers, for an update"},
		Default: Enforce,
		check:   airlinePassengerCount,
	},
	{
		ID:      "airline.baggage",
		Policy:  "Free checked bags per passenger follow membership and cabin (regular 0/1/2, silver 1/2/3, gold 2/3/4 in basic economy/economy/business), every other bag is non-free, and bags are added, never removed.",
		Tools:   []string{"book_reservation", "update_reservation_baggages"},
		Facts:   []string{"the user's membership", "the cabin and passengers", "the reservation's bags, for an update"},
		Default: Enforce,
		check:   airlineBaggage,
	},
	{
		ID:      "airline.payment",
		Policy:  "Every payment method is in the user's profile; a booking uses at most one travel certificate, one credit card and three gift cards; a change of flights is paid with one gift card or credit card.",
		Tools:   []string{"book_reservation", "update_reservation_flights", "update_reservation_baggages"},
		Facts:   []string{"the user's payment methods"},
		Default: Enforce,
		check:   airlinePayment,
	},
	{
		ID:      "airline.one_user",
		Policy:  "One user per conversation: no action on another user's reservations or profile.",
		Facts:   []string{"the user the conversation identified first", "the user of the reservation the write changes"},
		Default: Enforce,
		check:   airlineOneUser,
	},
	{
		ID:      "airline.confirmed",
		Policy:  "The user said yes to the action before it is taken (the word list; logged only, for the confirmation judge to replace).",
		Facts:   []string{"the conversation (--context)"},
		Default: Log,
		LogOnly: true,
		check:   confirmed,
	},
}

// airlineFacts are what an airline session has shown the agent.
type airlineFacts struct {
	users        map[string]*airlineUser
	reservations map[string]*airlineReservation
	// owners are the users whose reservations lists name a reservation.
	owners map[string]string
	// status are flight statuses by "number date".
	status map[string]string
}

type airlineUser struct {
	id, membership string
	payments       map[string]string // id → source
}

type airlineReservation struct {
	id, user, cabin, insurance, created, status string
	flights                                     []airlineFlight
	passengers                                  int
	total, nonfree                              int
	hasBags                                     bool
}

type airlineFlight struct{ number, date string }

func (f airlineFlight) key() string { return f.number + " " + f.date }

func newAirlineFacts() *airlineFacts {
	return &airlineFacts{
		users:        map[string]*airlineUser{},
		reservations: map[string]*airlineReservation{},
		owners:       map[string]string{},
		status:       map[string]string{},
	}
}

// flightStatus reports whether text is a flight's status as
// get_flight_status answers it: a word or two ("landed", "on time").
func flightStatus(text string) bool {
	return text != "" && len(text) <= 40 && !isErrorText(text) &&
		!strings.ContainsFunc(text, func(r rune) bool { return r != ' ' && !unicode.IsLetter(r) })
}

func (f *airlineFacts) result(s *Session, tool string, args map[string]any, text string, isError bool) {
	if isError {
		return
	}
	if tool == "get_flight_status" {
		fl := airlineFlight{number: getStr(args, "flight_number"), date: getStr(args, "date")}
		if fl.number != "" && fl.date != "" && flightStatus(text) {
			f.status[fl.key()] = text
		}
		return
	}
	rec, ok := parseRecord(text)
	if !ok {
		return
	}
	switch tool {
	case "get_user_details":
		id := getStr(rec, "user_id")
		if id == "" {
			return
		}
		u := &airlineUser{id: id, membership: getStr(rec, "membership"), payments: map[string]string{}}
		for pid, v := range getObj(rec, "payment_methods") {
			pm, _ := v.(map[string]any)
			u.payments[pid] = getStr(pm, "source")
		}
		for _, r := range getList(rec, "reservations") {
			if rid, ok := r.(string); ok {
				f.owners[rid] = id
			}
		}
		f.users[id] = u
		s.identify(id)
	case "get_reservation_details", "book_reservation", "cancel_reservation",
		"update_reservation_baggages", "update_reservation_flights", "update_reservation_passengers":
		f.reservation(rec)
	}
}

func (f *airlineFacts) reservation(rec map[string]any) {
	id := getStr(rec, "reservation_id")
	if id == "" {
		return
	}
	r := &airlineReservation{
		id:        id,
		user:      getStr(rec, "user_id"),
		cabin:     getStr(rec, "cabin"),
		insurance: getStr(rec, "insurance"),
		created:   getStr(rec, "created_at"),
		status:    getStr(rec, "status"),
	}
	for _, v := range getList(rec, "flights") {
		fl, _ := v.(map[string]any)
		r.flights = append(r.flights, airlineFlight{number: getStr(fl, "flight_number"), date: getStr(fl, "date")})
	}
	r.passengers = len(getList(rec, "passengers"))
	var ok1, ok2 bool
	r.total, ok1 = getInt(rec, "total_baggages")
	r.nonfree, ok2 = getInt(rec, "nonfree_baggages")
	r.hasBags = ok1 && ok2
	f.reservations[id] = r
	if r.user != "" {
		f.owners[id] = r.user
	}
}

// reservationOf returns the reservation the call names, or the fact it
// lacks.
func (f *airlineFacts) reservationOf(c *call) (*airlineReservation, *Verdict) {
	id, ok := c.str("reservation_id")
	if !ok || id == "" {
		v := lacks("the call's reservation_id")
		return nil, &v
	}
	r := f.reservations[id]
	if r == nil {
		v := lacks("reservation " + id + ", never shown")
		return nil, &v
	}
	return r, nil
}

// flown returns a flight of r that has flown, as a status the agent was
// shown says (landed, or flying). A flight's date alone does not count:
// τ²-bench's own tasks cancel reservations whose first flight is dated
// before the policy's today.
func (s *Session) flown(r *airlineReservation) (airlineFlight, bool) {
	for _, fl := range r.flights {
		if st := s.airline.status[fl.key()]; st == "landed" || st == "flying" {
			return fl, true
		}
	}
	return airlineFlight{}, false
}

// coveredWords are the words of a customer's message that give a reason
// travel insurance covers: health or weather.
var coveredWords = []string{
	"health", "sick", "ill", "illness", "medical", "hospital", "hospitalized", "doctor", "injury", "injured",
	"surgery", "covid", "flu", "fever", "pregnant", "pregnancy", "disease", "unwell",
	"weather", "storm", "hurricane", "snow", "snowstorm", "blizzard", "flood", "flooding", "tornado", "typhoon",
}

// coveredPhrases are the phrases that do, matched on a message's words
// joined by single spaces.
var coveredPhrases = []string{"feeling well", "feel well", "not well", "under the weather"}

// saidCovered reports whether a customer's message gives a covered reason.
func (s *Session) saidCovered() bool {
	for _, m := range s.conv {
		if m.Role != "user" {
			continue
		}
		words := strings.FieldsFunc(strings.ToLower(m.Text), func(r rune) bool { return !unicode.IsLetter(r) })
		for _, w := range words {
			if slices.Contains(coveredWords, w) {
				return true
			}
		}
		joined := " " + strings.Join(words, " ") + " "
		for _, p := range coveredPhrases {
			if strings.Contains(joined, " "+p+" ") {
				return true
			}
		}
	}
	return false
}

func (s *Session) hasUserMessages() bool {
	return slices.ContainsFunc(s.conv, func(m Message) bool { return m.Role == "user" })
}

func airlineCancelEligibility(s *Session, c *call) Verdict {
	r, v := s.airline.reservationOf(c)
	if v != nil {
		return *v
	}
	if r.status == "cancelled" {
		return allow() // nothing left to cancel: the server says so
	}
	if fl, ok := s.flown(r); ok {
		return refuse("flight %s on %s of reservation %s has already flown, and a reservation partly flown is not cancelled by the agent (transfer to a human agent)", fl.number, fl.date, r.id)
	}
	created, err := time.Parse("2006-01-02T15:04:05", r.created)
	if err != nil {
		return lacks("when reservation " + r.id + " was booked")
	}
	if s.now.Sub(created) <= 24*time.Hour {
		return allow()
	}
	if r.cabin == "business" {
		return allow()
	}
	for _, fl := range r.flights {
		if s.airline.status[fl.key()] == "cancelled" {
			return allow()
		}
	}
	if r.insurance == "yes" {
		if !s.hasUserMessages() {
			return lacks("the customer's reason for cancelling (--context)")
		}
		if s.saidCovered() {
			return allow()
		}
		// The insurance covers health and weather; a word list that finds
		// neither cannot tell what else the customer meant, and τ²-bench's
		// own tasks cancel insured reservations for other reasons.
		return lacks("whether the customer's reason is one the insurance covers (health or weather)")
	}
	return refuse("reservation %s was booked on %s, more than 24 hours ago, in %s, with no flight cancelled by the airline and without travel insurance", r.id, r.created[:10], cabinName(r.cabin))
}

func cabinName(cabin string) string { return strings.ReplaceAll(cabin, "_", " ") }

// callFlights reads the flights a call names.
func callFlights(c *call) ([]airlineFlight, bool) {
	list, ok := c.args["flights"].([]any)
	if !ok {
		return nil, false
	}
	var out []airlineFlight
	for _, v := range list {
		fl, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		out = append(out, airlineFlight{number: getStr(fl, "flight_number"), date: getStr(fl, "date")})
	}
	return out, true
}

func sameFlights(a, b []airlineFlight) bool {
	if len(a) != len(b) {
		return false
	}
	keys := func(fs []airlineFlight) []string {
		out := make([]string, len(fs))
		for i, f := range fs {
			out[i] = f.key()
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(keys(a), keys(b))
}

func airlineBasicEconomy(s *Session, c *call) Verdict {
	r, v := s.airline.reservationOf(c)
	if v != nil {
		return *v
	}
	if r.cabin != "basic_economy" {
		return allow()
	}
	fls, ok := callFlights(c)
	if !ok {
		return lacks("the call's flights")
	}
	if sameFlights(fls, r.flights) {
		return allow() // the cabin may change; the flights stay
	}
	return refuse("reservation %s is basic economy, whose flights cannot be changed (only its cabin)", r.id)
}

func airlineCabin(s *Session, c *call) Verdict {
	r, v := s.airline.reservationOf(c)
	if v != nil {
		return *v
	}
	cabin, ok := c.str("cabin")
	if !ok {
		return lacks("the call's cabin")
	}
	if cabin == r.cabin {
		return allow()
	}
	if fl, ok := s.flown(r); ok {
		return refuse("flight %s on %s of reservation %s has already flown, so the reservation's cabin cannot change from %s to %s", fl.number, fl.date, r.id, cabinName(r.cabin), cabinName(cabin))
	}
	// No flight is shown flown; one of today or before, whose status was
	// never shown, may have: the rule cannot tell, and says so.
	today := s.now.Format("2006-01-02")
	for _, fl := range r.flights {
		if _, shown := s.airline.status[fl.key()]; !shown && (fl.date == "" || fl.date <= today) {
			return lacks(fmt.Sprintf("the status of flight %s on %s (get_flight_status), which may have flown", fl.number, fl.date))
		}
	}
	return allow()
}

func airlinePassengerCount(s *Session, c *call) Verdict {
	list, ok := c.args["passengers"].([]any)
	if !ok {
		return lacks("the call's passengers")
	}
	n := len(list)
	if c.tool == "book_reservation" {
		if n > 5 {
			return refuse("a reservation has at most five passengers, and this one names %d", n)
		}
		return allow()
	}
	r, v := s.airline.reservationOf(c)
	if v != nil {
		return *v
	}
	if n == r.passengers {
		return allow()
	}
	return refuse("reservation %s has %d passenger(s), and their number cannot change (the call names %d)", r.id, r.passengers, n)
}

// freeBags are the free checked bags per passenger, by membership and cabin.
var freeBags = map[string]map[string]int{
	"regular": {"basic_economy": 0, "economy": 1, "business": 2},
	"silver":  {"basic_economy": 1, "economy": 2, "business": 3},
	"gold":    {"basic_economy": 2, "economy": 3, "business": 4},
}

func airlineBaggage(s *Session, c *call) Verdict {
	f := s.airline
	total, ok1 := getInt(c.args, "total_baggages")
	nonfree, ok2 := getInt(c.args, "nonfree_baggages")
	if !ok1 || !ok2 {
		return lacks("the call's total_baggages and nonfree_baggages")
	}
	var user, cabin string
	var passengers int
	if c.tool == "book_reservation" {
		user, _ = c.str("user_id")
		cabin, _ = c.str("cabin")
		list, ok := c.args["passengers"].([]any)
		if !ok {
			return lacks("the call's passengers")
		}
		passengers = len(list)
	} else {
		r, v := f.reservationOf(c)
		if v != nil {
			return *v
		}
		if r.hasBags && total < r.total {
			return refuse("checked bags are added, never removed: reservation %s has %d, and the call would leave %d", r.id, r.total, total)
		}
		user, cabin, passengers = r.user, r.cabin, r.passengers
	}
	u := f.users[user]
	if u == nil {
		return lacks("the membership of " + user + " (get_user_details)")
	}
	per, ok := freeBags[u.membership][cabin]
	if !ok {
		return lacks("the allowance of a " + u.membership + " member in " + cabin)
	}
	free := per * passengers
	want := max(0, total-free)
	if nonfree == want {
		return allow()
	}
	return refuse("a %s member has %d free checked bag(s) per passenger in %s, %d for %d passenger(s), so %d bag(s) are %d non-free, not %d", u.membership, per, cabinName(cabin), free, passengers, total, want, nonfree)
}

func airlinePayment(s *Session, c *call) Verdict {
	f := s.airline
	user := ""
	if c.tool == "book_reservation" {
		user, _ = c.str("user_id")
	} else {
		r, v := f.reservationOf(c)
		if v != nil {
			return *v
		}
		user = r.user
	}
	u := f.users[user]
	if u == nil {
		return lacks("the payment methods of " + user + " (get_user_details)")
	}
	if c.tool != "book_reservation" {
		pid, ok := c.str("payment_id")
		if !ok || pid == "" {
			return lacks("the call's payment_id")
		}
		src, ok := u.payments[pid]
		if !ok {
			return refuse("%s is not in %s's profile, and every payment method must be", pid, u.id)
		}
		if c.tool == "update_reservation_flights" && src != "gift_card" && src != "credit_card" {
			return refuse("a change of flights is paid with a gift card or a credit card, and %s is a %s", pid, cabinName(src))
		}
		return allow()
	}
	list, ok := c.args["payment_methods"].([]any)
	if !ok {
		return lacks("the call's payment_methods")
	}
	count := map[string]int{}
	for _, v := range list {
		pm, _ := v.(map[string]any)
		pid := getStr(pm, "payment_id")
		if pid == "" {
			return lacks("the call's payment_id of each payment method")
		}
		src, ok := u.payments[pid]
		if !ok {
			return refuse("%s is not in %s's profile, and every payment method must be", pid, u.id)
		}
		count[src]++
	}
	switch {
	case count["certificate"] > 1:
		return refuse("a booking uses at most one travel certificate, and this one uses %d", count["certificate"])
	case count["credit_card"] > 1:
		return refuse("a booking uses at most one credit card, and this one uses %d", count["credit_card"])
	case count["gift_card"] > 3:
		return refuse("a booking uses at most three gift cards, and this one uses %d", count["gift_card"])
	}
	return allow()
}

func airlineOneUser(s *Session, c *call) Verdict {
	if s.user == "" {
		return lacks("the user the conversation is with")
	}
	var owner, what string
	switch c.tool {
	case "book_reservation", "send_certificate":
		id, ok := c.str("user_id")
		if !ok || id == "" {
			return lacks("the call's user_id")
		}
		owner, what = id, fmt.Sprintf("the call is for %s", id)
	default:
		id, ok := c.str("reservation_id")
		if !ok || id == "" {
			return lacks("the call's reservation_id")
		}
		owner = s.airline.owners[id]
		if owner == "" {
			return lacks("the user of reservation " + id)
		}
		what = fmt.Sprintf("reservation %s is %s's", id, owner)
	}
	if owner == s.user {
		return allow()
	}
	return refuse("%s, and this conversation is with %s: a conversation helps one user only", what, s.user)
}
