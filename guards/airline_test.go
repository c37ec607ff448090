package guards

import (
	"fmt"
	"strings"
	"testing"
)

func airlineUserJSON(id, membership string) string {
	return fmt.Sprintf(`{"user_id": "%s", "name": {"first_name": "Yara", "last_name": "Garcia"}, "payment_methods": {"gift_card_1": {"source": "gift_card", "id": "gift_card_1", "amount": 200.0}, "gift_card_2": {"source": "gift_card", "id": "gift_card_2", "amount": 10.0}, "credit_card_1": {"source": "credit_card", "id": "credit_card_1"}, "credit_card_2": {"source": "credit_card", "id": "credit_card_2"}, "certificate_1": {"source": "certificate", "id": "certificate_1", "amount": 100.0}, "certificate_2": {"source": "certificate", "id": "certificate_2", "amount": 50.0}}, "membership": "%s", "reservations": ["ABC123", "DEF456"]}`, id, membership)
}

// reservationJSON is reservation id of user, booked at created, in cabin,
// for passengers passengers, with insurance.
func reservationJSON(id, user, cabin, created, insurance string, passengers int) string {
	ps := ""
	for i := range passengers {
		if i > 0 {
			ps += ", "
		}
		ps += fmt.Sprintf(`{"first_name": "P%d", "last_name": "Garcia", "dob": "1974-08-15"}`, i)
	}
	return fmt.Sprintf(`{"reservation_id": "%s", "user_id": "%s", "origin": "IAH", "destination": "SFO", "flight_type": "round_trip", "cabin": "%s", "flights": [{"flight_number": "HAT085", "origin": "IAH", "destination": "SFO", "date": "2024-05-18", "price": 177}, {"flight_number": "HAT278", "origin": "SFO", "destination": "IAH", "date": "2024-05-22", "price": 180}], "passengers": [%s], "payment_history": [{"payment_id": "gift_card_1", "amount": 357}], "created_at": "%s", "total_baggages": 1, "nonfree_baggages": 0, "insurance": "%s", "status": null}`, id, user, cabin, ps, created, insurance)
}

// airlineSession is a session that was shown user_1 (membership) and its
// reservation ABC123 as reservationJSON gives it.
func airlineSession(membership, cabin, created, insurance string, passengers int, said ...string) func(t *testing.T) *Session {
	return func(t *testing.T) *Session {
		t.Helper()
		s := bare(Airline)(t)
		s.Result("get_user_details", raw(`{"user_id":"user_1"}`), airlineUserJSON("user_1", membership), false)
		s.Result("get_reservation_details", raw(`{"reservation_id":"ABC123"}`), reservationJSON("ABC123", "user_1", cabin, created, insurance, passengers), false)
		for i, l := range said {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			s.Message(role, l)
		}
		return s
	}
}

// The policy's now is 2024-05-15 15:00.
const (
	longAgo   = "2024-05-01T10:00:00"
	yesterday = "2024-05-14T16:00:00" // 23 hours before
)

func TestAirlineCancelEligibility(t *testing.T) {
	cancel := `{"reservation_id":"ABC123"}`
	cancelledFlight := func(t *testing.T) *Session {
		s := airlineSession("regular", "economy", longAgo, "no", 1)(t)
		s.Result("get_flight_status", raw(`{"flight_number":"HAT085","date":"2024-05-18"}`), "cancelled", false)
		return s
	}
	flownFlight := func(t *testing.T) *Session {
		s := airlineSession("regular", "business", yesterday, "no", 1)(t)
		s.Result("get_flight_status", raw(`{"flight_number":"HAT085","date":"2024-05-18"}`), "landed", false)
		return s
	}
	runRuleCases(t, "airline.cancel_eligibility", []ruleCase{
		{"booked within 24 hours", airlineSession("regular", "economy", yesterday, "no", 1), "cancel_reservation", cancel, Allow, ""},
		{"business class", airlineSession("regular", "business", longAgo, "no", 1), "cancel_reservation", cancel, Allow, ""},
		{"a flight the airline cancelled", cancelledFlight, "cancel_reservation", cancel, Allow, ""},
		{"insured, and unwell", airlineSession("regular", "economy", longAgo, "yes", 1, "I am not feeling well, please cancel"), "cancel_reservation", cancel, Allow, ""},
		{"none of them", airlineSession("gold", "economy", longAgo, "no", 1, "Change of plans, cancel it"), "cancel_reservation", cancel, Refuse,
			"reservation ABC123 was booked on 2024-05-01, more than 24 hours ago, in economy, with no flight cancelled by the airline and without travel insurance"},
		{"a flight flown", flownFlight, "cancel_reservation", cancel, Refuse, "flight HAT085 on 2024-05-18 of reservation ABC123 has already flown"},
		{"insured, for a reason the word list cannot place", airlineSession("regular", "economy", longAgo, "yes", 1, "My plans changed"), "cancel_reservation", cancel, Lacks, "whether the customer's reason is one the insurance covers"},
		{"insured, no conversation", airlineSession("regular", "economy", longAgo, "yes", 1), "cancel_reservation", cancel, Lacks, "--context"},
		{"the reservation never shown", bare(Airline), "cancel_reservation", cancel, Lacks, "reservation ABC123, never shown"},
	})
}

func TestAirlineBasicEconomy(t *testing.T) {
	same := `{"reservation_id":"ABC123","cabin":"economy","flights":[{"flight_number":"HAT278","date":"2024-05-22"},{"flight_number":"HAT085","date":"2024-05-18"}],"payment_id":"credit_card_1"}`
	other := `{"reservation_id":"ABC123","cabin":"basic_economy","flights":[{"flight_number":"HAT072","date":"2024-05-19"},{"flight_number":"HAT278","date":"2024-05-22"}],"payment_id":"credit_card_1"}`
	runRuleCases(t, "airline.basic_economy", []ruleCase{
		{"basic economy, only the cabin changes", airlineSession("regular", "basic_economy", longAgo, "no", 1), "update_reservation_flights", same, Allow, ""},
		{"basic economy, other flights", airlineSession("regular", "basic_economy", longAgo, "no", 1), "update_reservation_flights", other, Refuse, "reservation ABC123 is basic economy, whose flights cannot be changed"},
		{"economy, other flights", airlineSession("regular", "economy", longAgo, "no", 1), "update_reservation_flights", other, Allow, ""},
		{"never shown", bare(Airline), "update_reservation_flights", other, Lacks, "reservation ABC123, never shown"},
	})
}

func TestAirlineCabin(t *testing.T) {
	upgrade := `{"reservation_id":"ABC123","cabin":"business","flights":[{"flight_number":"HAT085","date":"2024-05-18"},{"flight_number":"HAT278","date":"2024-05-22"}],"payment_id":"credit_card_1"}`
	flown := func(t *testing.T) *Session {
		s := airlineSession("regular", "economy", longAgo, "no", 1)(t)
		s.Result("get_flight_status", raw(`{"flight_number":"HAT085","date":"2024-05-18"}`), "flying", false)
		return s
	}
	runRuleCases(t, "airline.cabin", []ruleCase{
		{"nothing flown", airlineSession("regular", "economy", longAgo, "no", 1), "update_reservation_flights", upgrade, Allow, ""},
		{"a flight flying", flown, "update_reservation_flights", upgrade, Refuse, "so the reservation's cabin cannot change from economy to business"},
		{"no cabin named", airlineSession("regular", "economy", longAgo, "no", 1), "update_reservation_flights", `{"reservation_id":"ABC123"}`, Lacks, "the call's cabin"},
		// A flight of today or before may have flown: without its status
		// the rule cannot tell, and says so rather than allow.
		{"a flight of today, its status never shown", outbound("2024-05-15"), "update_reservation_flights", strings.Replace(upgrade, "2024-05-18", "2024-05-15", 1), Lacks, "the status of flight HAT085 on 2024-05-15 (get_flight_status)"},
		{"a flight of last week, its status never shown", outbound("2024-05-08"), "update_reservation_flights", strings.Replace(upgrade, "2024-05-18", "2024-05-08", 1), Lacks, "the status of flight HAT085 on 2024-05-08"},
		{"a flight of today, shown on time", func(t *testing.T) *Session {
			s := outbound("2024-05-15")(t)
			s.Result("get_flight_status", raw(`{"flight_number":"HAT085","date":"2024-05-15"}`), "on time", false)
			return s
		}, "update_reservation_flights", strings.Replace(upgrade, "2024-05-18", "2024-05-15", 1), Allow, ""},
		{"a flight of today, the cabin kept", outbound("2024-05-15"), "update_reservation_flights", strings.Replace(strings.Replace(upgrade, "2024-05-18", "2024-05-15", 1), "business", "economy", 1), Allow, ""},
	})
}

// outbound is airlineSession's economy reservation with its outbound
// flight on date.
func outbound(date string) func(t *testing.T) *Session {
	return func(t *testing.T) *Session {
		t.Helper()
		s := bare(Airline)(t)
		s.Result("get_user_details", raw(`{"user_id":"user_1"}`), airlineUserJSON("user_1", "regular"), false)
		s.Result("get_reservation_details", raw(`{"reservation_id":"ABC123"}`), strings.Replace(reservationJSON("ABC123", "user_1", "economy", longAgo, "no", 1), "2024-05-18", date, 1), false)
		return s
	}
}

func TestAirlinePassengerCount(t *testing.T) {
	pax := func(n int) string {
		s := `[`
		for i := range n {
			if i > 0 {
				s += ","
			}
			s += fmt.Sprintf(`{"first_name":"P%d","last_name":"G","dob":"1990-01-01"}`, i)
		}
		return s + `]`
	}
	runRuleCases(t, "airline.passenger_count", []ruleCase{
		{"book five", bare(Airline), "book_reservation", `{"user_id":"user_1","passengers":` + pax(5) + `}`, Allow, ""},
		{"book six", bare(Airline), "book_reservation", `{"user_id":"user_1","passengers":` + pax(6) + `}`, Refuse, "at most five passengers, and this one names 6"},
		{"update keeping two", airlineSession("regular", "economy", longAgo, "no", 2), "update_reservation_passengers", `{"reservation_id":"ABC123","passengers":` + pax(2) + `}`, Allow, ""},
		{"update to three", airlineSession("regular", "economy", longAgo, "no", 2), "update_reservation_passengers", `{"reservation_id":"ABC123","passengers":` + pax(3) + `}`, Refuse, "reservation ABC123 has 2 passenger(s), and their number cannot change (the call names 3)"},
		{"update, never shown", bare(Airline), "update_reservation_passengers", `{"reservation_id":"ABC123","passengers":` + pax(1) + `}`, Lacks, "never shown"},
	})
}

func TestAirlineBaggage(t *testing.T) {
	bags := func(total, nonfree int) string {
		return fmt.Sprintf(`{"reservation_id":"ABC123","total_baggages":%d,"nonfree_baggages":%d,"payment_id":"credit_card_1"}`, total, nonfree)
	}
	book := func(cabin string, total, nonfree int) string {
		return fmt.Sprintf(`{"user_id":"user_1","cabin":"%s","passengers":[{"first_name":"A","last_name":"B","dob":"1990-01-01"}],"total_baggages":%d,"nonfree_baggages":%d,"payment_methods":[{"payment_id":"credit_card_1","amount":100}]}`, cabin, total, nonfree)
	}
	userOnly := func(membership string) func(t *testing.T) *Session {
		return func(t *testing.T) *Session {
			s := bare(Airline)(t)
			s.Result("get_user_details", raw(`{"user_id":"user_1"}`), airlineUserJSON("user_1", membership), false)
			return s
		}
	}
	runRuleCases(t, "airline.baggage", []ruleCase{
		{"silver economy, two passengers, four bags free", airlineSession("silver", "economy", longAgo, "no", 2), "update_reservation_baggages", bags(4, 0), Allow, ""},
		{"silver economy, two passengers, five bags, one paid", airlineSession("silver", "economy", longAgo, "no", 2), "update_reservation_baggages", bags(5, 1), Allow, ""},
		{"regular economy, bags not paid", airlineSession("regular", "economy", longAgo, "no", 1), "update_reservation_baggages", bags(3, 0), Refuse,
			"a regular member has 1 free checked bag(s) per passenger in economy, 1 for 1 passenger(s), so 3 bag(s) are 2 non-free, not 0"},
		{"a bag removed", airlineSession("gold", "economy", longAgo, "no", 1), "update_reservation_baggages", bags(0, 0), Refuse, "checked bags are added, never removed: reservation ABC123 has 1"},
		{"gold business booking", userOnly("gold"), "book_reservation", book("business", 4, 0), Allow, ""},
		{"regular basic economy booking", userOnly("regular"), "book_reservation", book("basic_economy", 1, 0), Refuse, "so 1 bag(s) are 1 non-free, not 0"},
		{"membership never shown", bare(Airline), "book_reservation", book("economy", 1, 0), Lacks, "the membership of user_1"},
	})
}

func TestAirlinePayment(t *testing.T) {
	book := func(pms string) string {
		return `{"user_id":"user_1","cabin":"economy","passengers":[],"payment_methods":` + pms + `}`
	}
	user := func(t *testing.T) *Session {
		s := bare(Airline)(t)
		s.Result("get_user_details", raw(`{"user_id":"user_1"}`), airlineUserJSON("user_1", "gold"), false)
		return s
	}
	runRuleCases(t, "airline.payment", []ruleCase{
		{"a certificate and a card", user, "book_reservation", book(`[{"payment_id":"certificate_1","amount":100},{"payment_id":"credit_card_1","amount":50}]`), Allow, ""},
		{"two certificates", user, "book_reservation", book(`[{"payment_id":"certificate_1","amount":100},{"payment_id":"certificate_2","amount":50}]`), Refuse, "at most one travel certificate, and this one uses 2"},
		{"two credit cards", user, "book_reservation", book(`[{"payment_id":"credit_card_1","amount":100},{"payment_id":"credit_card_2","amount":50}]`), Refuse, "at most one credit card"},
		{"not in the profile", user, "book_reservation", book(`[{"payment_id":"credit_card_7","amount":100}]`), Refuse, "credit_card_7 is not in user_1's profile"},
		{"a certificate for a change of flights", airlineSession("gold", "economy", longAgo, "no", 1), "update_reservation_flights",
			`{"reservation_id":"ABC123","cabin":"economy","flights":[],"payment_id":"certificate_1"}`, Refuse, "paid with a gift card or a credit card, and certificate_1 is a certificate"},
		{"a gift card for a change of flights", airlineSession("gold", "economy", longAgo, "no", 1), "update_reservation_flights",
			`{"reservation_id":"ABC123","cabin":"economy","flights":[],"payment_id":"gift_card_1"}`, Allow, ""},
		{"the user never shown", bare(Airline), "book_reservation", book(`[{"payment_id":"credit_card_1","amount":100}]`), Lacks, "the payment methods of user_1"},
	})
}

func TestAirlineOneUser(t *testing.T) {
	runRuleCases(t, "airline.one_user", []ruleCase{
		{"the user's reservation", airlineSession("gold", "economy", longAgo, "no", 1), "cancel_reservation", `{"reservation_id":"ABC123"}`, Allow, ""},
		{"one the profile lists", airlineSession("gold", "economy", longAgo, "no", 1), "cancel_reservation", `{"reservation_id":"DEF456"}`, Allow, ""},
		{"a certificate for another user", airlineSession("gold", "economy", longAgo, "no", 1), "send_certificate", `{"user_id":"user_2","amount":100}`, Refuse, "the call is for user_2, and this conversation is with user_1"},
		{"another user's reservation", func(t *testing.T) *Session {
			s := airlineSession("gold", "economy", longAgo, "no", 1)(t)
			s.Result("get_reservation_details", raw(`{"reservation_id":"ZZZ999"}`), reservationJSON("ZZZ999", "user_2", "economy", longAgo, "no", 1), false)
			return s
		}, "cancel_reservation", `{"reservation_id":"ZZZ999"}`, Refuse, "reservation ZZZ999 is user_2's"},
		{"nobody identified", bare(Airline), "cancel_reservation", `{"reservation_id":"ABC123"}`, Lacks, "the user the conversation is with"},
	})
}
