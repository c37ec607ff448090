package guards

import (
	"fmt"
	"math"
)

// The retail rules, from τ²-bench's retail policy
// (../shared/data/tau2/policies/retail.md). Their facts are records the
// retail tools answer with: users (get_user_details), orders
// (get_order_details, and every write on an order, which answers with the
// order as it is after), products (get_product_details) and items
// (get_item_details), and the user id the find_user_id tools answer.

// retailWrites are the retail tools that change the database.
var retailWrites = map[string]bool{
	"cancel_pending_order":           true,
	"exchange_delivered_order_items": true,
	"modify_pending_order_address":   true,
	"modify_pending_order_items":     true,
	"modify_pending_order_payment":   true,
	"modify_user_address":            true,
	"return_delivered_order_items":   true,
}

// The retail tools that change an order's items, which an order allows
// once ("Exchange or modify order tools can only be called once per order").
var itemChanges = []string{"modify_pending_order_items", "exchange_delivered_order_items"}

var retailRules = []*Rule{
	{
		ID:      "retail.cancel_reason",
		Policy:  "An order is cancelled only for one of the reasons 'no longer needed' or 'ordered by mistake'.",
		Tools:   []string{"cancel_pending_order"},
		Facts:   []string{"the call's reason"},
		Default: Enforce,
		check:   retailCancelReason,
	},
	{
		ID:      "retail.order_status",
		Policy:  "Only a pending order is cancelled or modified (once its items were modified, only its address), and only a delivered order is returned or exchanged; the agent checks the status first.",
		Tools:   []string{"cancel_pending_order", "modify_pending_order_address", "modify_pending_order_items", "modify_pending_order_payment", "return_delivered_order_items", "exchange_delivered_order_items"},
		Facts:   []string{"the order's status, as last shown"},
		Default: Enforce,
		check:   retailOrderStatus,
	},
	{
		ID:      "retail.once_per_order",
		Policy:  "An order's items are modified, or exchanged, once: every item to change goes into one call.",
		Tools:   itemChanges,
		Facts:   []string{"the item changes this conversation made"},
		Default: Enforce,
		check:   retailOncePerOrder,
	},
	{
		ID:      "retail.same_product",
		Policy:  "Each item is changed for an available item of the same product with other options: never another product.",
		Tools:   itemChanges,
		Facts:   []string{"the order's items", "the product of each new item (get_product_details)"},
		Default: Enforce,
		check:   retailSameProduct,
	},
	{
		ID:      "retail.payment_method",
		Policy:  "A payment method is one of the user's own; a new payment method for an order differs from its original one.",
		Tools:   []string{"modify_pending_order_payment", "modify_pending_order_items", "exchange_delivered_order_items", "return_delivered_order_items"},
		Facts:   []string{"the order's user and payments", "the user's payment methods"},
		Default: Enforce,
		check:   retailPaymentMethod,
	},
	{
		ID:      "retail.gift_card_balance",
		Policy:  "A gift card pays only what its balance covers: an order's total, or an item change's price difference.",
		Tools:   []string{"modify_pending_order_payment", "modify_pending_order_items", "exchange_delivered_order_items"},
		Facts:   []string{"the gift card's balance", "the order's total, or the items' prices"},
		Default: Enforce,
		check:   retailGiftCardBalance,
	},
	{
		ID:      "retail.refund_destination",
		Policy:  "A return's refund goes to the order's original payment method or to one of the user's gift cards.",
		Tools:   []string{"return_delivered_order_items"},
		Facts:   []string{"the order's payments", "the user's payment methods"},
		Default: Enforce,
		check:   retailRefundDestination,
	},
	{
		ID:      "retail.one_user",
		Policy:  "One user per conversation: no action on another user's orders or profile.",
		Facts:   []string{"the user the conversation identified first", "the user of the order or profile the write changes"},
		Default: Enforce,
		check:   retailOneUser,
	},
	{
		ID:      "retail.confirmed",
		Policy:  "The user said yes to the action before it is taken (the word list; logged only, for the confirmation judge to replace).",
		Facts:   []string{"the conversation (--context)"},
		Default: Log,
		LogOnly: true,
		check:   confirmed,
	},
}

// retailFacts are what a retail session has shown the agent.
type retailFacts struct {
	users  map[string]*retailUser
	orders map[string]*retailOrder
	// owners are the users whose orders lists name an order, by order.
	owners map[string]string
	// items are what is known of each item id: its product and price
	// (orders, products) and availability (products, items).
	items map[string]*retailItem
	// products are product names by id, for refusals.
	products map[string]string
	// changing counts the item changes sent for each order and not yet
	// answered; changed names the one that changed its items.
	changing map[string]int
	changed  map[string]string
}

type retailUser struct {
	id       string
	payments map[string]retailPayment
}

type retailPayment struct {
	source     string
	balance    float64
	hasBalance bool
}

type retailOrder struct {
	id, user, status string
	items            []retailOrderItem
	payments         []retailTxn
}

type retailOrderItem struct {
	item, product string
	price         float64
}

type retailTxn struct {
	kind   string
	amount float64
	method string
}

type retailItem struct {
	product               string
	price                 float64
	hasPrice              bool
	available, knownAvail bool
}

func newRetailFacts() *retailFacts {
	return &retailFacts{
		users:    map[string]*retailUser{},
		orders:   map[string]*retailOrder{},
		owners:   map[string]string{},
		items:    map[string]*retailItem{},
		products: map[string]string{},
		changing: map[string]int{},
		changed:  map[string]string{},
	}
}

func (f *retailFacts) item(id string) *retailItem {
	it := f.items[id]
	if it == nil {
		it = &retailItem{}
		f.items[id] = it
	}
	return it
}

// result takes one result the agent was shown.
func (f *retailFacts) result(s *Session, tool string, args map[string]any, text string, isError bool) {
	if isItemChange(tool) {
		if order := getStr(args, "order_id"); f.changing[order] > 0 {
			f.changing[order]--
		}
	}
	if isError {
		return
	}
	switch tool {
	case "find_user_id_by_email", "find_user_id_by_name_zip":
		if plainID(text) {
			s.identify(text)
		}
		return
	}
	rec, ok := parseRecord(text)
	if !ok {
		return
	}
	switch tool {
	case "get_user_details", "modify_user_address":
		if u := f.user(rec); u != nil && tool == "get_user_details" {
			s.identify(u.id)
		}
	case "get_product_details":
		f.product(rec)
	case "get_item_details":
		if id := getStr(rec, "item_id"); id != "" {
			it := f.item(id)
			if p, ok := getNum(rec, "price"); ok {
				it.price, it.hasPrice = p, true
			}
			if a, ok := rec["available"].(bool); ok {
				it.available, it.knownAvail = a, true
			}
		}
	default:
		if o := f.order(rec); o != nil && isItemChange(tool) {
			f.changed[o.id] = tool
		}
	}
}

// user takes a user record.
func (f *retailFacts) user(rec map[string]any) *retailUser {
	id := getStr(rec, "user_id")
	if id == "" {
		return nil
	}
	u := &retailUser{id: id, payments: map[string]retailPayment{}}
	for pid, v := range getObj(rec, "payment_methods") {
		pm, _ := v.(map[string]any)
		p := retailPayment{source: getStr(pm, "source")}
		p.balance, p.hasBalance = getNum(pm, "balance")
		u.payments[pid] = p
	}
	for _, o := range getList(rec, "orders") {
		if oid, ok := o.(string); ok {
			f.owners[oid] = id
		}
	}
	f.users[id] = u
	return u
}

// order takes an order record: the order as the last result showed it.
func (f *retailFacts) order(rec map[string]any) *retailOrder {
	id := getStr(rec, "order_id")
	status, hasStatus := rec["status"].(string)
	if id == "" || !hasStatus {
		return nil
	}
	o := &retailOrder{id: id, user: getStr(rec, "user_id"), status: status}
	for _, v := range getList(rec, "items") {
		it, _ := v.(map[string]any)
		oi := retailOrderItem{item: getStr(it, "item_id"), product: getStr(it, "product_id")}
		oi.price, _ = getNum(it, "price")
		o.items = append(o.items, oi)
		if oi.item != "" && oi.product != "" {
			known := f.item(oi.item)
			known.product = oi.product
			if !known.hasPrice {
				known.price, known.hasPrice = oi.price, true
			}
		}
		if name := getStr(it, "name"); name != "" && oi.product != "" {
			f.products[oi.product] = name
		}
	}
	for _, v := range getList(rec, "payment_history") {
		p, _ := v.(map[string]any)
		t := retailTxn{kind: getStr(p, "transaction_type"), method: getStr(p, "payment_method_id")}
		t.amount, _ = getNum(p, "amount")
		o.payments = append(o.payments, t)
	}
	f.orders[id] = o
	return o
}

// product takes a product record: its name and every variant.
func (f *retailFacts) product(rec map[string]any) {
	pid := getStr(rec, "product_id")
	if pid == "" {
		return
	}
	if name := getStr(rec, "name"); name != "" {
		f.products[pid] = name
	}
	for id, v := range getObj(rec, "variants") {
		vr, _ := v.(map[string]any)
		it := f.item(id)
		it.product = pid
		if p, ok := getNum(vr, "price"); ok {
			it.price, it.hasPrice = p, true
		}
		if a, ok := vr["available"].(bool); ok {
			it.available, it.knownAvail = a, true
		}
	}
}

// sent counts an item change sent to the server.
func (f *retailFacts) sent(tool string, args map[string]any) {
	if isItemChange(tool) {
		if order := getStr(args, "order_id"); order != "" {
			f.changing[order]++
		}
	}
}

func isItemChange(tool string) bool { return tool == itemChanges[0] || tool == itemChanges[1] }

// original returns the payment method that paid for the order: its first
// payment.
func (o *retailOrder) original() (retailTxn, bool) {
	for _, t := range o.payments {
		if t.kind == "payment" {
			return t, true
		}
	}
	return retailTxn{}, false
}

// orderOf returns the order the call names, or the fact it lacks.
func (f *retailFacts) orderOf(c *call) (*retailOrder, string, *Verdict) {
	id, ok := c.str("order_id")
	if !ok || id == "" {
		v := lacks("the call's order_id")
		return nil, "", &v
	}
	o := f.orders[id]
	if o == nil {
		v := lacks("order " + id + ", never shown")
		return nil, id, &v
	}
	return o, id, nil
}

func retailCancelReason(_ *Session, c *call) Verdict {
	reason, ok := c.str("reason")
	if !ok {
		return lacks("the call's reason")
	}
	if reason == "no longer needed" || reason == "ordered by mistake" {
		return allow()
	}
	return refuse("%s is not an accepted reason", quoteValue(reason))
}

func retailOrderStatus(s *Session, c *call) Verdict {
	o, id, v := s.retail.orderOf(c)
	if v != nil {
		return *v
	}
	want, verb := "pending", ""
	switch c.tool {
	case "cancel_pending_order":
		verb = "cancelled"
	case "modify_pending_order_address", "modify_pending_order_items", "modify_pending_order_payment":
		verb = "modified"
	case "return_delivered_order_items":
		want, verb = "delivered", "returned"
	case "exchange_delivered_order_items":
		want, verb = "delivered", "exchanged"
	}
	if o.status == want {
		return allow()
	}
	if o.status == itemModified {
		// τ²-bench's policy: modifying the items "will change the order
		// status to 'pending (items modifed)'. The agent will not be able
		// to modify or cancel the order anymore", and its tools refuse
		// the items, the payment (the order then has two payments) and a
		// cancellation; the address alone its tools still change, and
		// its tasks ask for (retail task 71: the address and the items of
		// one order).
		if c.tool == "modify_pending_order_address" {
			return allow()
		}
		if want == "pending" {
			return refuse("order %s is %s: its items were modified, and it can no longer be %s but for its address", id, o.status, verb)
		}
	}
	return refuse("order %s is %s, and only a %s order can be %s", id, o.status, want, verb)
}

// itemModified is the status of a pending order whose items were modified
// (τ²-bench's modify_pending_order_items).
const itemModified = "pending (item modified)"

func retailOncePerOrder(s *Session, c *call) Verdict {
	id, ok := c.str("order_id")
	if !ok || id == "" {
		return lacks("the call's order_id")
	}
	f := s.retail
	done := f.changed[id]
	if done == "" && f.changing[id] > 0 {
		done = "a call still in flight"
	}
	if done == "" {
		return allow()
	}
	return refuse("the items of order %s were already changed in this conversation (%s), and an order's items are changed once, every item in one call", id, done)
}

func retailSameProduct(s *Session, c *call) Verdict {
	f := s.retail
	o, id, v := f.orderOf(c)
	if v != nil {
		return *v
	}
	olds, ok1 := c.strs("item_ids")
	news, ok2 := c.strs("new_item_ids")
	if !ok1 || !ok2 {
		return lacks("the call's item_ids and new_item_ids")
	}
	if len(olds) != len(news) {
		return refuse("the call names %d item(s) to change and %d new item(s): each item changes for one new item", len(olds), len(news))
	}
	inOrder := map[string]int{}
	for _, it := range o.items {
		inOrder[it.item]++
	}
	for i, old := range olds {
		if inOrder[old] == 0 {
			return refuse("item %s is not in order %s (or not that many times)", old, id)
		}
		inOrder[old]--
		oi := o.itemNamed(old)
		nw := news[i]
		if nw == old && c.tool == "modify_pending_order_items" {
			// τ²-bench's modification refuses it too; its exchange takes
			// an item for itself, and successful episodes did so.
			return refuse("item %s would change for itself: a new item has other options", old)
		}
		it := f.items[nw]
		if it == nil || it.product == "" {
			return lacks("the product of item " + nw + " (get_product_details)")
		}
		if it.product != oi.product {
			return refuse("item %s is %s, not %s as item %s is: an item changes only for another option of the same product", nw, f.productName(it.product), f.productName(oi.product), old)
		}
		if it.knownAvail && !it.available {
			return refuse("item %s is not available", nw)
		}
	}
	return allow()
}

func (o *retailOrder) itemNamed(id string) retailOrderItem {
	for _, it := range o.items {
		if it.item == id {
			return it
		}
	}
	return retailOrderItem{}
}

// productName says which product an item is of. No article: names such as
// "Indoor Security Camera" and "Hiking Boots" take none that fits them all.
func (f *retailFacts) productName(pid string) string {
	if name := f.products[pid]; name != "" {
		return fmt.Sprintf("of product %s (%s)", pid, name)
	}
	return "of product " + pid
}

// payer returns the order and its user's record, or the fact lacking.
func (f *retailFacts) payer(c *call) (*retailOrder, *retailUser, string, *Verdict) {
	o, _, v := f.orderOf(c)
	if v != nil {
		return nil, nil, "", v
	}
	pm, ok := c.str("payment_method_id")
	if !ok || pm == "" {
		v := lacks("the call's payment_method_id")
		return nil, nil, "", &v
	}
	u := f.users[o.user]
	if u == nil {
		v := lacks("the payment methods of " + o.user + " (get_user_details)")
		return nil, nil, "", &v
	}
	return o, u, pm, nil
}

func retailPaymentMethod(s *Session, c *call) Verdict {
	o, u, pm, v := s.retail.payer(c)
	if v != nil {
		return *v
	}
	if _, ok := u.payments[pm]; !ok {
		return refuse("%s is not one of %s's payment methods", pm, u.id)
	}
	if c.tool == "modify_pending_order_payment" {
		if orig, ok := o.original(); ok && orig.method == pm {
			return refuse("%s already pays for order %s, and the new payment method must be another", pm, o.id)
		}
	}
	return allow()
}

func retailGiftCardBalance(s *Session, c *call) Verdict {
	f := s.retail
	o, u, pm, v := f.payer(c)
	if v != nil {
		return *v
	}
	p, ok := u.payments[pm]
	if !ok || p.source != "gift_card" {
		return allow() // not a gift card: nothing to cover (retail.payment_method says whose it is)
	}
	if !p.hasBalance {
		return lacks("the balance of " + pm)
	}
	var owe float64
	what := ""
	switch c.tool {
	case "modify_pending_order_payment":
		orig, ok := o.original()
		if !ok {
			return lacks("the total of order " + o.id)
		}
		owe, what = orig.amount, "the order's total"
	default:
		olds, ok1 := c.strs("item_ids")
		news, ok2 := c.strs("new_item_ids")
		if !ok1 || !ok2 || len(olds) != len(news) {
			return lacks("the call's items")
		}
		for i := range olds {
			oi := o.itemNamed(olds[i])
			it := f.items[news[i]]
			if oi.item == "" || it == nil || !it.hasPrice {
				return lacks("the price of item " + news[i])
			}
			owe += it.price - oi.price
		}
		owe = math.Round(owe*100) / 100
		what = "the price difference"
	}
	if p.balance >= owe {
		return allow()
	}
	return refuse("gift card %s has a balance of %s, less than %s of %s", pm, money(p.balance), what, money(owe))
}

func retailRefundDestination(s *Session, c *call) Verdict {
	f := s.retail
	o, _, v := f.orderOf(c)
	if v != nil {
		return *v
	}
	pm, ok := c.str("payment_method_id")
	if !ok || pm == "" {
		return lacks("the call's payment_method_id")
	}
	orig, ok := o.original()
	if !ok {
		return lacks("the payments of order " + o.id)
	}
	if pm == orig.method {
		return allow()
	}
	u := f.users[o.user]
	if u == nil {
		return lacks("the payment methods of " + o.user + " (get_user_details)")
	}
	if p, ok := u.payments[pm]; ok && p.source == "gift_card" {
		return allow()
	}
	return refuse("a return's refund goes to the order's original payment method (%s) or one of the user's gift cards, and %s is neither", orig.method, pm)
}

func retailOneUser(s *Session, c *call) Verdict {
	if s.user == "" {
		return lacks("the user the conversation is with")
	}
	f := s.retail
	var owner, what string
	if c.tool == "modify_user_address" {
		id, ok := c.str("user_id")
		if !ok || id == "" {
			return lacks("the call's user_id")
		}
		owner, what = id, "the profile of "+id
	} else {
		id, ok := c.str("order_id")
		if !ok || id == "" {
			return lacks("the call's order_id")
		}
		if o := f.orders[id]; o != nil && o.user != "" {
			owner = o.user
		} else if u := f.owners[id]; u != "" {
			owner = u
		} else {
			return lacks("the user of order " + id)
		}
		what = "order " + id + " is " + owner + "'s"
	}
	if owner == s.user {
		return allow()
	}
	if c.tool == "modify_user_address" {
		return refuse("%s is not this conversation's user (%s), and a conversation helps one user only", what, s.user)
	}
	return refuse("%s, and this conversation is with %s: a conversation helps one user only", what, s.user)
}
