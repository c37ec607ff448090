package demo

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
)

// tau2Tools are the tools of τ²-bench's retail domain as its recorded
// sessions list them (the tools/list result of the logs in
// testdata/tau2/logs/retail: descriptions, input schemas, and readOnlyHint
// true for reads, false for writes, none for calculate and
// transfer_to_human_agents), with get_item_details, which τ²-bench added
// after those sessions were recorded, from τ²-bench's tools.json, in its
// alphabetical place.
//
//go:embed tau2_retail_tools.json
var tau2Tools []byte

// Tau2Retail is the world of hoist-mcp-demo --world tau2-retail: τ²-bench's
// retail domain, its sixteen tools over its database, with τ²-bench's
// semantics (../shared/data/tau2/reference/retail_tools.py): what each read
// returns, what each write checks and changes, and the errors it raises,
// answered as error results worded as τ²-bench words them ("Error: Order
// not found"). Records are answered as τ²-bench's model_dump and json.dumps
// write them, every field of the record, absent optional ones as null, so
// that a recorded session's reads come back byte for byte.
//
// A Tau2Retail is one session's world: it starts from the database as
// loaded and its writes change only its own copy; NewSession gives another
// session a fresh copy. Its calls run one at a time, in the order they came
// (Sequential), as τ²-bench runs an agent's calls, since a write and a read
// of one turn must not race. It is safe for concurrent use.
type Tau2Retail struct {
	base  *Tau2DB
	tools []any

	mu sync.Mutex
	db *Tau2DB
}

var (
	_ World        = (*Tau2Retail)(nil)
	_ SessionWorld = (*Tau2Retail)(nil)
	_ Sequential   = (*Tau2Retail)(nil)
)

// SessionWorld is a World whose state belongs to one MCP session: the
// Streamable HTTP server gives each session its own from NewSession.
type SessionWorld interface {
	World
	// NewSession returns the world of a new session, in its first state.
	NewSession() World
}

// Sequential is a World whose calls must run one at a time in the order
// they arrived: the stdio server then answers each before reading the next.
type Sequential interface {
	World
	// Sequential reports whether calls must run in order.
	Sequential() bool
}

// NewTau2Retail returns a session's world over db, which it never changes.
func NewTau2Retail(db *Tau2DB) *Tau2Retail {
	w := &Tau2Retail{base: db, db: db.clone()}
	if err := json.Unmarshal(tau2Tools, &w.tools); err != nil {
		panic("demo: tau2_retail_tools.json: " + err.Error()) // embedded, so a build error
	}
	return w
}

// NewSession implements SessionWorld.
func (w *Tau2Retail) NewSession() World { return NewTau2Retail(w.base) }

// Sequential implements Sequential.
func (*Tau2Retail) Sequential() bool { return true }

// Tools implements World.
func (w *Tau2Retail) Tools() []any { return w.tools }

// Instructions implements World.
func (w *Tau2Retail) Instructions() string {
	p, u, o := w.base.Stats()
	return fmt.Sprintf("τ²-bench's retail domain: its sixteen tools over its database (%d products, %d users, %d orders). "+
		"Each session starts from the database as loaded; writes change only this session's copy.", p, u, o)
}

// tau2Param is one parameter of a tool: its name, and whether it is a list
// of strings (else a string).
type tau2Param struct {
	name string
	list bool
}

// tau2Tool is one tool: its parameters in τ²-bench's order and its body.
type tau2Tool struct {
	params []tau2Param
	run    func(db *Tau2DB, a tau2Args) (string, error)
}

// tau2Args are a call's arguments, checked against the tool's parameters.
type tau2Args map[string]any

func (a tau2Args) str(name string) string    { s, _ := a[name].(string); return s }
func (a tau2Args) list(name string) []string { l, _ := a[name].([]string); return l }

// tau2Error is a ValueError a tool raises: its message is the error
// result's text after "Error: ".
type tau2Error string

func (e tau2Error) Error() string { return string(e) }

func errorf(format string, a ...any) error { return tau2Error(fmt.Sprintf(format, a...)) }

func s(name string) tau2Param  { return tau2Param{name: name} }
func ls(name string) tau2Param { return tau2Param{name: name, list: true} }

var address = []tau2Param{s("address1"), s("address2"), s("city"), s("state"), s("country"), s("zip")}

var tau2Retail = map[string]tau2Tool{
	"calculate":                      {[]tau2Param{s("expression")}, calculate},
	"cancel_pending_order":           {[]tau2Param{s("order_id"), s("reason")}, cancelPendingOrder},
	"exchange_delivered_order_items": {[]tau2Param{s("order_id"), ls("item_ids"), ls("new_item_ids"), s("payment_method_id")}, exchangeDeliveredOrderItems},
	"find_user_id_by_email":          {[]tau2Param{s("email")}, findUserIDByEmail},
	"find_user_id_by_name_zip":       {[]tau2Param{s("first_name"), s("last_name"), s("zip")}, findUserIDByNameZip},
	"get_item_details":               {[]tau2Param{s("item_id")}, getItemDetails},
	"get_order_details":              {[]tau2Param{s("order_id")}, getOrderDetails},
	"get_product_details":            {[]tau2Param{s("product_id")}, getProductDetails},
	"get_user_details":               {[]tau2Param{s("user_id")}, getUserDetails},
	"list_all_product_types":         {nil, listAllProductTypes},
	"modify_pending_order_address":   {append([]tau2Param{s("order_id")}, address...), modifyPendingOrderAddress},
	"modify_pending_order_items":     {[]tau2Param{s("order_id"), ls("item_ids"), ls("new_item_ids"), s("payment_method_id")}, modifyPendingOrderItems},
	"modify_pending_order_payment":   {[]tau2Param{s("order_id"), s("payment_method_id")}, modifyPendingOrderPayment},
	"modify_user_address":            {append([]tau2Param{s("user_id")}, address...), modifyUserAddress},
	"return_delivered_order_items":   {[]tau2Param{s("order_id"), ls("item_ids"), s("payment_method_id")}, returnDeliveredOrderItems},
	"transfer_to_human_agents":       {[]tau2Param{s("summary")}, transferToHumanAgents},
}

// Call implements World.
func (w *Tau2Retail) Call(_ context.Context, name string, args map[string]any) (any, bool) {
	tool, ok := tau2Retail[name]
	if !ok {
		return nil, false
	}
	a, err := checkArgs(name, tool.params, args)
	if err != nil {
		return errorResult(err.Error()), true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	text, err := tool.run(w.db, a)
	if err != nil {
		return errorResult(err.Error()), true
	}
	return textResult(text, false), true
}

// checkArgs checks a call's arguments as Python checks a call's keywords,
// with its words: an unknown one first, then the missing ones. τ²-bench does
// not check types; here an argument of another JSON type than its schema's
// is an error result naming it, since Python's failure on it would depend on
// the value.
func checkArgs(tool string, params []tau2Param, args map[string]any) (tau2Args, error) {
	known := map[string]tau2Param{}
	for _, p := range params {
		known[p.name] = p
	}
	var names []string
	for k := range args {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if _, ok := known[k]; !ok {
			return nil, errorf("RetailTools.%s() got an unexpected keyword argument '%s'", tool, k)
		}
	}
	var missing []string
	for _, p := range params {
		if _, ok := args[p.name]; !ok {
			missing = append(missing, "'"+p.name+"'")
		}
	}
	switch n := len(missing); {
	case n == 1:
		return nil, errorf("RetailTools.%s() missing 1 required positional argument: %s", tool, missing[0])
	case n == 2:
		return nil, errorf("RetailTools.%s() missing 2 required positional arguments: %s and %s", tool, missing[0], missing[1])
	case n > 2:
		return nil, errorf("RetailTools.%s() missing %d required positional arguments: %s, and %s", tool, n, strings.Join(missing[:n-1], ", "), missing[n-1])
	}
	a := tau2Args{}
	for _, p := range params {
		v := args[p.name]
		if !p.list {
			s, ok := v.(string)
			if !ok {
				return nil, errorf("argument %s: want a string, got %s", p.name, jsonKind(v))
			}
			a[p.name] = s
			continue
		}
		l, ok := v.([]any)
		if !ok {
			return nil, errorf("argument %s: want a list of strings, got %s", p.name, jsonKind(v))
		}
		list := make([]string, len(l))
		for i, el := range l {
			s, ok := el.(string)
			if !ok {
				return nil, errorf("argument %s[%d]: want a string, got %s", p.name, i, jsonKind(el))
			}
			list[i] = s
		}
		a[p.name] = list
	}
	return a, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64, json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "a list"
	}
	return "an object"
}

// The helpers of τ²-bench's RetailTools, with their errors.

func (db *Tau2DB) order(id string) (*t2Order, error) {
	if o, ok := db.orderByID[id]; ok {
		return o, nil
	}
	return nil, errorf("Order not found")
}

func (db *Tau2DB) user(id string) (*t2User, error) {
	if u, ok := db.userByID[id]; ok {
		return u, nil
	}
	return nil, errorf("User not found")
}

func (db *Tau2DB) product(id string) (*t2Product, error) {
	if p, ok := db.productByID[id]; ok {
		return p, nil
	}
	return nil, errorf("Product not found")
}

func (db *Tau2DB) variant(productID, variantID string) (*t2Variant, error) {
	p, err := db.product(productID)
	if err != nil {
		return nil, err
	}
	if v := p.variant(variantID); v != nil {
		return v, nil
	}
	return nil, errorf("Variant not found")
}

func (db *Tau2DB) paymentMethod(userID, id string) (*t2Payment, error) {
	u, err := db.user(userID)
	if err != nil {
		return nil, err
	}
	if p := u.payment(id); p != nil {
		return p, nil
	}
	return nil, errorf("Payment method not found")
}

// isPending is τ²-bench's loose check: "pending" anywhere in the status, so
// "pending (item modified)" is pending too.
func isPending(o *t2Order) bool { return strings.Contains(o.Status, "pending") }

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

func itemIDs(o *t2Order) []string {
	ids := make([]string, len(o.Items))
	for i, it := range o.Items {
		ids[i] = it.ItemID
	}
	return ids
}

// firstItem is Python's next(item for item in order.items if item.item_id
// == id), or nil.
func firstItem(o *t2Order, id string) *t2Item {
	for _, it := range o.Items {
		if it.ItemID == id {
			return it
		}
	}
	return nil
}

func sorted(list []string) []string {
	out := append([]string{}, list...)
	sort.Strings(out) // byte order of UTF-8 is Python's code point order
	return out
}

func dump(write func(w *pyJSON)) string {
	var w pyJSON
	write(&w)
	return w.String()
}

func orderText(o *t2Order) string { return dump(o.write) }

// The tools, in τ²-bench's order of definition.

func calculate(_ *Tau2DB, a tau2Args) (string, error) {
	return calc(a.str("expression"))
}

func cancelPendingOrder(db *Tau2DB, a tau2Args) (string, error) {
	o, err := db.order(a.str("order_id"))
	if err != nil {
		return "", err
	}
	if o.Status != "pending" {
		return "", errorf("Non-pending order cannot be cancelled")
	}
	reason := a.str("reason")
	if reason != "no longer needed" && reason != "ordered by mistake" {
		return "", errorf("Invalid reason")
	}
	var refunds []*t2Transaction
	for _, p := range o.Payments {
		refunds = append(refunds, &t2Transaction{Type: "refund", Amount: p.Amount, PaymentMethodID: p.PaymentMethodID})
		u, err := db.user(o.UserID)
		if err != nil {
			return "", err
		}
		pm, err := db.paymentMethod(u.ID, p.PaymentMethodID)
		if err != nil {
			return "", err
		}
		if pm.giftCard() { // refunded to the gift card at once
			pm.Balance = pyRound2(pm.Balance + p.Amount)
		}
	}
	o.Status = "cancelled"
	o.CancelReason = &reason
	o.Payments = append(o.Payments, refunds...)
	return orderText(o), nil
}

func exchangeDeliveredOrderItems(db *Tau2DB, a tau2Args) (string, error) {
	o, err := db.order(a.str("order_id"))
	if err != nil {
		return "", err
	}
	if o.Status != "delivered" {
		return "", errorf("Non-delivered order cannot be exchanged")
	}
	items, newItems := a.list("item_ids"), a.list("new_item_ids")
	all := itemIDs(o)
	for _, id := range items {
		if count(items, id) > count(all, id) {
			return "", errorf("Number of %s not found.", id)
		}
	}
	if len(items) != len(newItems) {
		return "", errorf("The number of items to be exchanged should match.")
	}
	diff := 0.0
	for i, id := range items {
		it := firstItem(o, id)
		if it == nil {
			return "", errorf("Item %s not found", id)
		}
		v, err := db.variant(it.ProductID, newItems[i])
		if err != nil {
			return "", err
		}
		if !v.Available {
			return "", errorf("New item %s not found or available", newItems[i])
		}
		diff += v.Price - it.Price
	}
	diff = pyRound2(diff)
	pmID := a.str("payment_method_id")
	pm, err := db.paymentMethod(o.UserID, pmID)
	if err != nil {
		return "", err
	}
	if pm.giftCard() && pm.Balance < diff {
		return "", errorf("Insufficient gift card balance to pay for the price difference")
	}
	o.Status = "exchange requested"
	o.ExchangeItems = sorted(items)
	o.ExchangeNewItems = sorted(newItems)
	o.ExchangePaymentMethodID = &pmID
	o.ExchangePriceDifference = &diff
	return orderText(o), nil
}

func findUserIDByNameZip(db *Tau2DB, a tau2Args) (string, error) {
	first, last, zip := strings.ToLower(a.str("first_name")), strings.ToLower(a.str("last_name")), a.str("zip")
	for _, u := range db.users {
		if strings.ToLower(u.FirstName) == first && strings.ToLower(u.LastName) == last && u.Address.Zip == zip {
			return u.Key, nil
		}
	}
	return "", errorf("User not found")
}

func findUserIDByEmail(db *Tau2DB, a tau2Args) (string, error) {
	email := strings.ToLower(a.str("email"))
	for _, u := range db.users {
		if strings.ToLower(u.Email) == email {
			return u.Key, nil
		}
	}
	return "", errorf("User not found")
}

func getOrderDetails(db *Tau2DB, a tau2Args) (string, error) {
	o, err := db.order(a.str("order_id"))
	if err != nil {
		return "", err
	}
	return orderText(o), nil
}

func getProductDetails(db *Tau2DB, a tau2Args) (string, error) {
	p, err := db.product(a.str("product_id"))
	if err != nil {
		return "", err
	}
	return dump(p.write), nil
}

func getItemDetails(db *Tau2DB, a tau2Args) (string, error) {
	id := a.str("item_id")
	for _, p := range db.products {
		if v := p.variant(id); v != nil {
			return dump(v.write), nil
		}
	}
	return "", errorf("Item not found")
}

func getUserDetails(db *Tau2DB, a tau2Args) (string, error) {
	u, err := db.user(a.str("user_id"))
	if err != nil {
		return "", err
	}
	return dump(u.write), nil
}

// listAllProductTypes answers json.dumps(names → ids, sort_keys=True): a
// name repeated keeps the last product's id.
func listAllProductTypes(db *Tau2DB, _ tau2Args) (string, error) {
	ids := map[string]string{}
	var names []string
	for _, p := range db.products {
		if _, ok := ids[p.Name]; !ok {
			names = append(names, p.Name)
		}
		ids[p.Name] = p.ID
	}
	sort.Strings(names)
	return dump(func(w *pyJSON) {
		w.beginObject()
		for _, n := range names {
			w.key(n)
			w.str(ids[n])
		}
		w.endObject()
	}), nil
}

func newAddress(a tau2Args) t2Address {
	return t2Address{Address1: a.str("address1"), Address2: a.str("address2"), City: a.str("city"),
		Country: a.str("country"), State: a.str("state"), Zip: a.str("zip")}
}

func modifyPendingOrderAddress(db *Tau2DB, a tau2Args) (string, error) {
	o, err := db.order(a.str("order_id"))
	if err != nil {
		return "", err
	}
	if !isPending(o) {
		return "", errorf("Non-pending order cannot be modified")
	}
	o.Address = newAddress(a)
	return orderText(o), nil
}

// modifyPendingOrderItems follows τ²-bench line by line, including what
// it does with several items: every modified item takes the price and the
// options of the last new item checked, and the payment's amount is the
// unrounded difference.
func modifyPendingOrderItems(db *Tau2DB, a tau2Args) (string, error) {
	o, err := db.order(a.str("order_id"))
	if err != nil {
		return "", err
	}
	if o.Status != "pending" {
		return "", errorf("Non-pending order cannot be modified")
	}
	items, newItems := a.list("item_ids"), a.list("new_item_ids")
	all := itemIDs(o)
	for _, id := range items {
		if count(items, id) > count(all, id) {
			return "", errorf("%s not found", id)
		}
	}
	if len(items) != len(newItems) {
		return "", errorf("The number of items to be exchanged should match")
	}
	diff := 0.0
	var variant *t2Variant
	for i, id := range items {
		if id == newItems[i] {
			return "", errorf("The new item id should be different from the old item id")
		}
		it := firstItem(o, id)
		if it == nil {
			return "", errorf("Item %s not found", id)
		}
		variant, err = db.variant(it.ProductID, newItems[i])
		if err != nil {
			return "", err
		}
		if !variant.Available {
			return "", errorf("New item %s not found or available", newItems[i])
		}
		diff += variant.Price - it.Price
	}
	pmID := a.str("payment_method_id")
	pm, err := db.paymentMethod(o.UserID, pmID)
	if err != nil {
		return "", err
	}
	if pm.giftCard() && pm.Balance < diff {
		return "", errorf("Insufficient gift card balance to pay for the new item")
	}
	kind := "refund"
	if diff > 0 {
		kind = "payment"
	}
	o.Payments = append(o.Payments, &t2Transaction{Type: kind, Amount: math.Abs(diff), PaymentMethodID: pmID})
	if pm.giftCard() {
		pm.Balance = pyRound2(pm.Balance - diff)
	}
	for i, id := range items {
		it := firstItem(o, id)
		if it == nil {
			return "", errorf("Item %s not found", id)
		}
		it.ItemID = newItems[i]
		if variant != nil {
			it.Price = variant.Price
			it.Options = append([]t2Option(nil), variant.Options...)
		}
	}
	o.Status = "pending (item modified)"
	return orderText(o), nil
}

func modifyPendingOrderPayment(db *Tau2DB, a tau2Args) (string, error) {
	o, err := db.order(a.str("order_id"))
	if err != nil {
		return "", err
	}
	if !isPending(o) {
		return "", errorf("Non-pending order cannot be modified")
	}
	pmID := a.str("payment_method_id")
	pm, err := db.paymentMethod(o.UserID, pmID)
	if err != nil {
		return "", err
	}
	if len(o.Payments) != 1 || o.Payments[0].Type != "payment" {
		return "", errorf("There should be exactly one payment for a pending order")
	}
	old := o.Payments[0]
	if old.PaymentMethodID == pmID {
		return "", errorf("The new payment method should be different from the current one")
	}
	amount := old.Amount
	if pm.giftCard() && pm.Balance < amount {
		return "", errorf("Insufficient gift card balance to pay for the order")
	}
	o.Payments = append(o.Payments,
		&t2Transaction{Type: "payment", Amount: amount, PaymentMethodID: pmID},
		&t2Transaction{Type: "refund", Amount: amount, PaymentMethodID: old.PaymentMethodID})
	if pm.giftCard() {
		pm.Balance = pyRound2(pm.Balance - amount)
	}
	oldPM, err := db.paymentMethod(o.UserID, old.PaymentMethodID)
	if err != nil {
		return "", err
	}
	if oldPM.giftCard() {
		oldPM.Balance = pyRound2(oldPM.Balance + amount)
	}
	return orderText(o), nil
}

func modifyUserAddress(db *Tau2DB, a tau2Args) (string, error) {
	u, err := db.user(a.str("user_id"))
	if err != nil {
		return "", err
	}
	u.Address = newAddress(a)
	return dump(u.write), nil
}

func returnDeliveredOrderItems(db *Tau2DB, a tau2Args) (string, error) {
	o, err := db.order(a.str("order_id"))
	if err != nil {
		return "", err
	}
	if o.Status != "delivered" {
		return "", errorf("Non-delivered order cannot be returned")
	}
	u, err := db.user(o.UserID)
	if err != nil {
		return "", err
	}
	pmID := a.str("payment_method_id")
	pm, err := db.paymentMethod(u.ID, pmID)
	if err != nil {
		return "", err
	}
	if !pm.giftCard() && (len(o.Payments) == 0 || pmID != o.Payments[0].PaymentMethodID) {
		if len(o.Payments) == 0 {
			return "", errorf("list index out of range")
		}
		return "", errorf("Payment method should be the original payment method")
	}
	items := a.list("item_ids")
	all := itemIDs(o)
	for _, id := range items {
		if count(items, id) > count(all, id) {
			return "", errorf("Some item not found")
		}
	}
	o.Status = "return requested"
	o.ReturnItems = sorted(items)
	o.ReturnPaymentMethodID = &pmID
	return orderText(o), nil
}

func transferToHumanAgents(_ *Tau2DB, _ tau2Args) (string, error) {
	return "Transfer successful", nil
}
