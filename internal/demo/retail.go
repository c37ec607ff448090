package demo

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
)

// DefaultRetailUsers is how many customers NewRetail's shop has.
const DefaultRetailUsers = 20

// retailTools are five of τ²-bench retail's tools, with their descriptions
// and input schemas copied from ../shared/data/tau2/tools.json, so that a
// flow learned from τ²-bench pins the same input contracts. Three read and
// two write (readOnlyHint false).
//
//go:embed retail_tools.json
var retailTools []byte

// Retail is the retail world of hoist-mcp-demo --world retail: a tiny shop
// with five of τ²-bench retail's tool names and canned data (hoist-mcp
// manual, "Try it"). Customer N (1 ≤ N ≤ Users) is user_N, whose email is
// cN@example.com and whose orders #WNa and #WNb are pending. Each pays with
// a credit card (credit_card_100000N), or when N is a multiple of 3 with a
// gift card (gift_card_100000N, balance 10N + 0.50), and also has a PayPal
// account (paypal_100000N); a customer who pays by card has a gift card of
// 25.00 besides (gift_card_200000N), too little for any order, so that the
// guards' payment rules (issue 10) have something to refuse. Answers are
// what τ²-bench's retail tools answer: a user id as plain text, users and
// orders as JSON text with Python's separators, and errors as isError
// results such as "Error: User not found".
//
// The data is the same in every process; cancel_pending_order and
// modify_pending_order_payment change it in memory, so a cancelled order
// reads as cancelled until the process exits. A Retail is safe for
// concurrent use.
type Retail struct {
	tools []any
	// Journal, when set, gets one JSON line per tools/call the shop serves,
	// {"tool", "arguments"}, before it is answered: what reached the server
	// (hoist-mcp-demo --calls-log).
	Journal io.Writer

	jmu    sync.Mutex // Journal's lines, one at a time
	mu     sync.Mutex
	users  map[string]*retailUser
	orders map[string]*retailOrder
	emails map[string]string // email → user id
}

var _ World = (*Retail)(nil)

// The JSON shapes below follow τ²-bench's retail data model, member for
// member and in its order, so that answers read like τ²-bench's.

type retailName struct {
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
}

type retailAddress struct {
	Address1 string `json:"address1"`
	Address2 string `json:"address2"`
	City     string `json:"city"`
	Country  string `json:"country"`
	State    string `json:"state"`
	Zip      string `json:"zip"`
}

type retailPayment struct {
	Source   string     `json:"source"`
	ID       string     `json:"id"`
	Brand    string     `json:"brand,omitempty"`
	LastFour string     `json:"last_four,omitempty"`
	Balance  *jsonFloat `json:"balance,omitempty"`
}

type retailUser struct {
	UserID         string                   `json:"user_id"`
	Name           retailName               `json:"name"`
	Address        retailAddress            `json:"address"`
	Email          string                   `json:"email"`
	PaymentMethods map[string]retailPayment `json:"payment_methods"`
	Orders         []string                 `json:"orders"`
}

type retailItem struct {
	Name      string            `json:"name"`
	ProductID string            `json:"product_id"`
	ItemID    string            `json:"item_id"`
	Price     jsonFloat         `json:"price"`
	Options   map[string]string `json:"options"`
}

type retailTransaction struct {
	TransactionType string    `json:"transaction_type"`
	Amount          jsonFloat `json:"amount"`
	PaymentMethodID string    `json:"payment_method_id"`
}

type retailOrder struct {
	OrderID                 string              `json:"order_id"`
	UserID                  string              `json:"user_id"`
	Address                 retailAddress       `json:"address"`
	Items                   []retailItem        `json:"items"`
	Status                  string              `json:"status"`
	Fulfillments            []any               `json:"fulfillments"`
	PaymentHistory          []retailTransaction `json:"payment_history"`
	CancelReason            *string             `json:"cancel_reason"`
	ExchangeItems           []string            `json:"exchange_items"`
	ExchangeNewItems        []string            `json:"exchange_new_items"`
	ExchangePaymentMethodID *string             `json:"exchange_payment_method_id"`
	ExchangePriceDifference *jsonFloat          `json:"exchange_price_difference"`
	ReturnItems             []string            `json:"return_items"`
	ReturnPaymentMethodID   *string             `json:"return_payment_method_id"`
}

// jsonFloat is an amount in dollars, written as Python writes a float: with
// a decimal point even when whole (12.0), as τ²-bench's answers have them.
type jsonFloat float64

// MarshalJSON implements json.Marshaler.
func (f jsonFloat) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(float64(f))
	if err != nil {
		return nil, err
	}
	if !bytes.ContainsAny(b, ".eE") {
		b = append(b, ".0"...)
	}
	return b, nil
}

// The canned data: customer N draws from these lists by N, so every process
// serves the same shop.
var (
	retailFirstNames = []string{"Ava", "Liam", "Mei", "Noah", "Yusuf", "Olivia", "Daiki", "Sofia", "Omar", "Emma"}
	retailLastNames  = []string{"Kovacs", "Lopez", "Davis", "Sanchez", "Ahmed", "Garcia", "Rossi", "Nguyen", "Silva", "Brown", "Ito"}
	retailStreets    = []string{"Maple Drive", "Laurel Lane", "Elm Street", "Cedar Avenue", "Hillcrest Drive", "River Road", "Oak Street"}
	retailCities     = []struct{ city, state, zip string }{
		{"Denver", "CO", "80217"}, {"Fort Worth", "TX", "76171"}, {"Seattle", "WA", "98105"},
		{"Austin", "TX", "78701"}, {"Columbus", "OH", "43215"}, {"Phoenix", "AZ", "85004"},
		{"Chicago", "IL", "60612"},
	}
	retailCatalog = []retailItem{
		{Name: "Water Bottle", ProductID: "8310926033", ItemID: "2366567022", Price: 54.04, Options: map[string]string{"capacity": "1000ml", "material": "stainless steel", "color": "blue"}},
		{Name: "Pet Bed", ProductID: "2747247837", ItemID: "2751999929", Price: 195.11, Options: map[string]string{"size": "large", "material": "memory foam", "color": "grey"}},
		{Name: "Office Chair", ProductID: "4794339885", ItemID: "8069050545", Price: 499.28, Options: map[string]string{"material": "leather", "color": "blue", "armrest": "none"}},
		{Name: "Skateboard", ProductID: "1968349452", ItemID: "3877188862", Price: 182.03, Options: map[string]string{"deck material": "plastic", "length": "31 inch", "design": "plain"}},
		{Name: "Portable Charger", ProductID: "6942297802", ItemID: "4063401924", Price: 109.27, Options: map[string]string{"capacity": "20000mAh", "output": "Wireless", "color": "blue"}},
		{Name: "Desk Lamp", ProductID: "6817146515", ItemID: "5320792178", Price: 135.24, Options: map[string]string{"color": "black", "brightness": "medium", "power source": "AC adapter"}},
		{Name: "T-Shirt", ProductID: "9523456873", ItemID: "9612497925", Price: 50.88, Options: map[string]string{"color": "blue", "size": "M", "material": "cotton", "style": "crew neck"}},
		{Name: "Hiking Boots", ProductID: "7363354090", ItemID: "1615379700", Price: 253.89, Options: map[string]string{"size": "10", "material": "synthetic", "waterproof": "yes"}},
	}
)

// NewRetail returns the shop with customers user_1 to user_users.
func NewRetail(users int) *Retail {
	r := &Retail{
		users:  map[string]*retailUser{},
		orders: map[string]*retailOrder{},
		emails: map[string]string{},
	}
	if err := json.Unmarshal(retailTools, &r.tools); err != nil {
		panic("demo: retail_tools.json: " + err.Error()) // embedded, so a build error
	}
	for n := 1; n <= users; n++ {
		r.addUser(n)
	}
	return r
}

func (r *Retail) addUser(n int) {
	id := fmt.Sprintf("user_%d", n)
	place := retailCities[n%len(retailCities)]
	addr := retailAddress{
		Address1: fmt.Sprintf("%d %s", 100+n*7, retailStreets[n%len(retailStreets)]),
		Address2: fmt.Sprintf("Suite %d", 200+n),
		City:     place.city,
		Country:  "USA",
		State:    place.state,
		Zip:      place.zip,
	}
	pay := retailPayment{Source: "credit_card", ID: fmt.Sprintf("credit_card_%d", 1000000+n), Brand: "visa", LastFour: fmt.Sprintf("%04d", 1000+n*37%9000)}
	methods := map[string]retailPayment{}
	if n%3 == 0 {
		bal := jsonFloat(float64(n*10) + 0.5)
		pay = retailPayment{Source: "gift_card", ID: fmt.Sprintf("gift_card_%d", 1000000+n), Balance: &bal}
	} else {
		small := jsonFloat(25)
		spare := retailPayment{Source: "gift_card", ID: fmt.Sprintf("gift_card_%d", 2000000+n), Balance: &small}
		methods[spare.ID] = spare
	}
	methods[pay.ID] = pay
	paypal := retailPayment{Source: "paypal", ID: fmt.Sprintf("paypal_%d", 1000000+n)}
	methods[paypal.ID] = paypal
	u := &retailUser{
		UserID:         id,
		Name:           retailName{FirstName: retailFirstNames[n%len(retailFirstNames)], LastName: retailLastNames[n%len(retailLastNames)]},
		Address:        addr,
		Email:          fmt.Sprintf("c%d@example.com", n),
		PaymentMethods: methods,
		Orders:         []string{fmt.Sprintf("#W%da", n), fmt.Sprintf("#W%db", n)},
	}
	r.users[id] = u
	r.emails[u.Email] = id
	picks := [][]int{{n % len(retailCatalog)}, {(n + 3) % len(retailCatalog), (n + 5) % len(retailCatalog)}}
	for i, oid := range u.Orders {
		o := &retailOrder{
			OrderID:      oid,
			UserID:       id,
			Address:      addr,
			Status:       "pending",
			Fulfillments: []any{},
		}
		var total float64
		for _, k := range picks[i] {
			o.Items = append(o.Items, retailCatalog[k])
			total += float64(retailCatalog[k].Price)
		}
		o.PaymentHistory = []retailTransaction{{TransactionType: "payment", Amount: cents(total), PaymentMethodID: pay.ID}}
		r.orders[oid] = o
	}
}

// cents rounds a sum of prices to cents, as a shop would bill it.
func cents(x float64) jsonFloat {
	if x < 0 {
		return -cents(-x)
	}
	return jsonFloat(float64(int64(x*100+0.5)) / 100)
}

// Tools implements World.
func (r *Retail) Tools() []any { return r.tools }

// Instructions implements World.
func (r *Retail) Instructions() string {
	return fmt.Sprintf("A tiny shop with five of τ²-bench retail's tools. Customers user_1 to user_%d have the emails c1@example.com to c%d@example.com; user_N's orders #WNa and #WNb are pending.", len(r.users), len(r.users))
}

// Call implements World.
func (r *Retail) Call(_ context.Context, name string, args map[string]any) (any, bool) {
	if r.Journal != nil {
		r.journal(name, args)
	}
	switch name {
	case "find_user_id_by_email":
		email, err := stringArg(args, "email")
		if err != nil {
			return errorResult(err.Error()), true
		}
		r.mu.Lock()
		id, ok := r.emails[strings.ToLower(email)]
		r.mu.Unlock()
		if !ok {
			return errorResult("User not found"), true
		}
		return textResult(id, false), true
	case "get_user_details":
		id, err := stringArg(args, "user_id")
		if err != nil {
			return errorResult(err.Error()), true
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		u, ok := r.users[id]
		if !ok {
			return errorResult("User not found"), true
		}
		return jsonResult(u), true
	case "get_order_details":
		id, err := stringArg(args, "order_id")
		if err != nil {
			return errorResult(err.Error()), true
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		o, ok := r.orders[id]
		if !ok {
			return errorResult("Order not found"), true
		}
		return jsonResult(o), true
	case "cancel_pending_order":
		return r.cancel(args), true
	case "modify_pending_order_payment":
		return r.modifyPayment(args), true
	}
	return nil, false
}

// journal writes one call to Journal, whole lines one at a time.
func (r *Retail) journal(name string, args map[string]any) {
	if args == nil {
		args = map[string]any{}
	}
	b, err := json.Marshal(map[string]any{"tool": name, "arguments": args})
	if err != nil {
		return
	}
	r.jmu.Lock()
	defer r.jmu.Unlock()
	r.Journal.Write(append(b, '\n'))
}

// orderArgs reads a write's order_id and its other string argument.
func orderArgs(args map[string]any, other string) (id, v string, err error) {
	if id, err = stringArg(args, "order_id"); err != nil {
		return "", "", err
	}
	v, err = stringArg(args, other)
	return id, v, err
}

// modifyPayment is τ²-bench's modify_pending_order_payment: a pending
// order's one payment moves to another of the user's payment methods, which
// as a gift card must cover the whole amount.
func (r *Retail) modifyPayment(args map[string]any) any {
	id, pm, err := orderArgs(args, "payment_method_id")
	if err != nil {
		return errorResult(err.Error())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	o, ok := r.orders[id]
	if !ok {
		return errorResult("Order not found")
	}
	if !strings.Contains(o.Status, "pending") {
		return errorResult("Non-pending order cannot be modified")
	}
	u := r.users[o.UserID]
	method, ok := u.PaymentMethods[pm]
	if !ok {
		return errorResult("Payment method not found")
	}
	if len(o.PaymentHistory) != 1 || o.PaymentHistory[0].TransactionType != "payment" {
		return errorResult("There should be exactly one payment for a pending order")
	}
	old := o.PaymentHistory[0]
	if old.PaymentMethodID == pm {
		return errorResult("The new payment method should be different from the current one")
	}
	if method.Source == "gift_card" && float64(*method.Balance) < float64(old.Amount) {
		return errorResult("Insufficient gift card balance to pay for the order")
	}
	o.PaymentHistory = append(o.PaymentHistory,
		retailTransaction{TransactionType: "payment", Amount: old.Amount, PaymentMethodID: pm},
		retailTransaction{TransactionType: "refund", Amount: old.Amount, PaymentMethodID: old.PaymentMethodID})
	if method.Source == "gift_card" {
		bal := cents(float64(*method.Balance) - float64(old.Amount))
		method.Balance = &bal
		u.PaymentMethods[pm] = method
	}
	if was := u.PaymentMethods[old.PaymentMethodID]; was.Source == "gift_card" {
		bal := cents(float64(*was.Balance) + float64(old.Amount))
		was.Balance = &bal
		u.PaymentMethods[old.PaymentMethodID] = was
	}
	return jsonResult(o)
}

// cancel is τ²-bench's cancel_pending_order: a pending order becomes
// cancelled, with its reason and a refund of each payment.
func (r *Retail) cancel(args map[string]any) any {
	id, reason, err := orderArgs(args, "reason")
	if err != nil {
		return errorResult(err.Error())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	o, ok := r.orders[id]
	if !ok {
		return errorResult("Order not found")
	}
	if o.Status != "pending" {
		return errorResult("Non-pending order cannot be cancelled")
	}
	if reason != "no longer needed" && reason != "ordered by mistake" {
		return errorResult("Invalid reason")
	}
	var refunds []retailTransaction
	for _, p := range o.PaymentHistory {
		refunds = append(refunds, retailTransaction{TransactionType: "refund", Amount: p.Amount, PaymentMethodID: p.PaymentMethodID})
	}
	o.PaymentHistory = append(o.PaymentHistory, refunds...)
	o.Status = "cancelled"
	o.CancelReason = &reason
	return jsonResult(o)
}

// stringArg returns the string argument name.
func stringArg(args map[string]any, name string) (string, error) {
	v, ok := args[name]
	if !ok {
		return "", fmt.Errorf("missing argument %s", name)
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("argument %s must be a string", name)
	}
	return s, nil
}

// errorResult is an error as τ²-bench answers it: "Error: " and the message.
func errorResult(msg string) map[string]any {
	return textResult("Error: "+msg, true)
}

// jsonResult answers with v as JSON text in Python's json.dumps style
// (", " and ": " between members), which is how τ²-bench's tools answer.
func jsonResult(v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		return errorResult(err.Error())
	}
	return textResult(string(pythonSeparators(b)), false)
}

// pythonSeparators rewrites compact JSON with a space after each ',' and
// ':' between tokens, as Python's json.dumps writes by default.
func pythonSeparators(compact []byte) []byte {
	out := make([]byte, 0, len(compact)+len(compact)/8)
	inString, escaped := false, false
	for _, c := range compact {
		out = append(out, c)
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == ',' || c == ':'):
			out = append(out, ' ')
		}
	}
	return out
}
