package demo

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"

	"github.com/hoist-mcp/hoist/jsontext"
)

// Tau2DB is τ²-bench's retail database as loaded: products, users and
// orders, each kept in the file's order, as Python's dicts keep it, since
// answers list variants, options and payment methods in that order. A Tau2DB
// is never changed: each session works on its own copy (clone).
type Tau2DB struct {
	products []*t2Product
	users    []*t2User
	orders   []*t2Order

	// The dicts' keys, which τ²-bench looks records up by.
	productByID map[string]*t2Product
	userByID    map[string]*t2User
	orderByID   map[string]*t2Order
}

// The record types follow τ²-bench's retail data model
// (../shared/data/tau2/reference/retail_data_model.py), field for field and
// in its order, which is the order its answers list them in: pydantic's
// model_dump writes a model's fields as the model declares them, whatever
// the file's order, and drops what the model does not declare.

type t2Address struct {
	Address1, Address2, City, Country, State, Zip string
}

// t2Payment is a payment method: a credit card (brand, last four digits), a
// gift card (balance) or a PayPal account (nothing more), told by Source.
type t2Payment struct {
	Key      string // its key in the user's payment_methods
	Source   string
	ID       string
	Brand    string
	LastFour string
	Balance  float64
}

func (p *t2Payment) giftCard() bool { return p.Source == "gift_card" }

type t2User struct {
	Key       string // its key in users, which the finders return
	ID        string
	FirstName string
	LastName  string
	Address   t2Address
	Email     string
	Payments  []*t2Payment
	Orders    []string
}

func (u *t2User) payment(id string) *t2Payment {
	for _, p := range u.Payments {
		if p.Key == id {
			return p
		}
	}
	return nil
}

// t2Option is one option of a variant or an item, such as color: blue.
type t2Option struct{ Name, Value string }

type t2Variant struct {
	Key       string // its key in the product's variants
	ItemID    string
	Options   []t2Option
	Available bool
	Price     float64
}

type t2Product struct {
	Name     string
	ID       string
	Variants []*t2Variant
}

func (p *t2Product) variant(id string) *t2Variant {
	for _, v := range p.Variants {
		if v.Key == id {
			return v
		}
	}
	return nil
}

type t2Item struct {
	Name      string
	ProductID string
	ItemID    string
	Price     float64
	Options   []t2Option
}

type t2Fulfillment struct {
	TrackingIDs []string
	ItemIDs     []string
}

type t2Transaction struct {
	Type            string // "payment" or "refund"
	Amount          float64
	PaymentMethodID string
}

// t2Order is an order. The optional fields are nil until a write sets them,
// and are written as null, as a recorded answer holds every field.
type t2Order struct {
	ID                      string
	UserID                  string
	Address                 t2Address
	Items                   []*t2Item
	Status                  string
	Fulfillments            []t2Fulfillment
	Payments                []*t2Transaction
	CancelReason            *string
	ExchangeItems           []string
	ExchangeNewItems        []string
	ExchangePaymentMethodID *string
	ExchangePriceDifference *float64
	ReturnItems             []string
	ReturnPaymentMethodID   *string
}

// LoadTau2DB reads τ²-bench's retail database (db/retail.json of τ²-bench)
// from path. A file that is not one says where: file:line, the record and
// the field.
func LoadTau2DB(path string) (*Tau2DB, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the retail database: %w", err)
	}
	return ParseTau2DB(path, data)
}

// DBError is a database that is not τ²-bench's retail one: the file, the
// line and the field at fault.
type DBError struct {
	File  string
	Line  int
	Field string
	Err   error
}

func (e *DBError) Error() string {
	s := e.File
	if e.Line > 0 {
		s += ":" + strconv.Itoa(e.Line)
	}
	if e.Field != "" {
		s += ": " + e.Field
	}
	return s + ": " + e.Err.Error()
}

func (e *DBError) Unwrap() error { return e.Err }

// ParseTau2DB parses the database in data; name is its file, for errors.
func ParseTau2DB(name string, data []byte) (*Tau2DB, error) {
	if !jsontext.Valid(data) {
		return nil, &DBError{File: name, Err: errors.New("not valid JSON")}
	}
	if jsontext.Kind(data) != '{' {
		return nil, &DBError{File: name, Line: 1, Err: errors.New("want an object of products, users and orders")}
	}
	d := &dbDecoder{file: name, data: data}
	db := &Tau2DB{productByID: map[string]*t2Product{}, userByID: map[string]*t2User{}, orderByID: map[string]*t2Order{}}
	seen := map[string]bool{}
	for k, v := range jsontext.Members(data) {
		switch string(k) {
		case "products":
			seen["products"] = true
			d.dict("products", v, func(key string, field string, rec []byte) {
				db.products = putKeyed(db.products, db.productByID, key, d.product(field, rec))
			})
		case "users":
			seen["users"] = true
			d.dict("users", v, func(key string, field string, rec []byte) {
				u := d.user(field, rec)
				u.Key = key
				db.users = putKeyed(db.users, db.userByID, key, u)
			})
		case "orders":
			seen["orders"] = true
			d.dict("orders", v, func(key string, field string, rec []byte) {
				db.orders = putKeyed(db.orders, db.orderByID, key, d.order(field, rec))
			})
		}
		if d.err != nil {
			return nil, d.err
		}
	}
	for _, name := range []string{"products", "users", "orders"} {
		if !seen[name] {
			return nil, &DBError{File: d.file, Line: 1, Field: name, Err: errors.New("missing")}
		}
	}
	return db, nil
}

// A JSON object read into a list keeps a key repeated in the place of its
// first occurrence, with the value of its last, as Python's json.loads
// builds a dict.

// putKeyed files v under key in list and byKey.
func putKeyed[T comparable](list []T, byKey map[string]T, key string, v T) []T {
	old, dup := byKey[key]
	byKey[key] = v
	if !dup {
		return append(list, v)
	}
	for i := range list {
		if list[i] == old {
			list[i] = v
		}
	}
	return list
}

// put adds v to list, whose elements keyOf names.
func put[T any](list []T, key string, keyOf func(T) string, v T) []T {
	for i := range list {
		if keyOf(list[i]) == key {
			list[i] = v
			return list
		}
	}
	return append(list, v)
}

// Stats returns how many products, users and orders the database holds.
func (db *Tau2DB) Stats() (products, users, orders int) {
	return len(db.products), len(db.users), len(db.orders)
}

// dbDecoder reads records out of the database's JSON, keeping the first
// problem it meets.
type dbDecoder struct {
	file string
	data []byte
	err  error
}

func (d *dbDecoder) fail(field string, at []byte, format string, a ...any) {
	if d.err != nil {
		return
	}
	line := 0
	if off := jsontext.Offset(d.data, at); off >= 0 && off <= len(d.data) {
		line = 1 + bytes.Count(d.data[:off], []byte("\n"))
	}
	d.err = &DBError{File: d.file, Line: line, Field: field, Err: fmt.Errorf(format, a...)}
}

// dict calls fn with each member of the object v, in order.
func (d *dbDecoder) dict(field string, v []byte, fn func(key, field string, rec []byte)) {
	if jsontext.Kind(v) != '{' {
		d.fail(field, v, "want an object")
		return
	}
	for k, rec := range jsontext.Members(v) {
		if d.err != nil {
			return
		}
		key := string(k)
		fn(key, field+"["+strconv.Quote(key)+"]", rec)
	}
}

// member reads one member of a record: f is the member's field path.
type member func(f string, val []byte)

// record reads the record v: each member it knows by its reader, the
// others (what the model does not declare, which model_dump drops) not at
// all. Every member the readers name is required, except the optional ones.
func (d *dbDecoder) record(field string, v []byte, members map[string]member, optional ...string) {
	if jsontext.Kind(v) != '{' {
		d.fail(field, v, "want an object")
		return
	}
	have := map[string]bool{}
	for k, val := range jsontext.Members(v) {
		name := string(k)
		if read, ok := members[name]; ok {
			have[name] = true
			read(field+"."+name, val)
		}
	}
	var missing []string
	for name := range members {
		if !have[name] && !slices.Contains(optional, name) {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		d.fail(field+"."+missing[0], v, "missing")
	}
}

func (d *dbDecoder) str(field string, v []byte) string {
	if jsontext.Kind(v) != '"' {
		d.fail(field, v, "want a string")
		return ""
	}
	return jsontext.Unquote(v)
}

func (d *dbDecoder) num(field string, v []byte) float64 {
	f, err := strconv.ParseFloat(string(v), 64)
	if k := jsontext.Kind(v); err != nil || k != '-' && (k < '0' || k > '9') {
		d.fail(field, v, "want a number")
	}
	return f
}

// orNull returns a reader of what read reads, or of null as nil: an
// optional field.
func orNull[T any](read func(field string, v []byte) T) func(field string, v []byte) *T {
	return func(field string, v []byte) *T {
		if jsontext.Kind(v) == 'n' {
			return nil
		}
		x := read(field, v)
		return &x
	}
}

func (d *dbDecoder) boolean(field string, v []byte) bool {
	switch string(v) {
	case "true":
		return true
	case "false":
		return false
	}
	d.fail(field, v, "want true or false")
	return false
}

// list calls fn with each element of the list v.
func (d *dbDecoder) list(field string, v []byte, fn func(field string, el []byte)) {
	if jsontext.Kind(v) != '[' {
		d.fail(field, v, "want a list")
		return
	}
	i := 0
	for el := range jsontext.Elements(v) {
		fn(fmt.Sprintf("%s[%d]", field, i), el)
		i++
	}
}

func (d *dbDecoder) strs(field string, v []byte) []string {
	list := []string{}
	d.list(field, v, func(f string, el []byte) { list = append(list, d.str(f, el)) })
	return list
}

func (d *dbDecoder) optStrs(field string, v []byte) []string {
	if jsontext.Kind(v) == 'n' {
		return nil
	}
	return d.strs(field, v)
}

func (d *dbDecoder) options(field string, v []byte) []t2Option {
	opts := []t2Option{}
	d.dict(field, v, func(key, f string, val []byte) {
		opts = put(opts, key, func(o t2Option) string { return o.Name }, t2Option{Name: key, Value: d.str(f, val)})
	})
	return opts
}

// to returns a member reader that stores what read reads in *dst.
func to[T any](dst *T, read func(field string, v []byte) T) member {
	return func(f string, val []byte) { *dst = read(f, val) }
}

func (d *dbDecoder) address(field string, v []byte) t2Address {
	var a t2Address
	d.record(field, v, map[string]member{
		"address1": to(&a.Address1, d.str), "address2": to(&a.Address2, d.str), "city": to(&a.City, d.str),
		"country": to(&a.Country, d.str), "state": to(&a.State, d.str), "zip": to(&a.Zip, d.str),
	})
	return a
}

func (d *dbDecoder) product(field string, v []byte) *t2Product {
	p := &t2Product{Variants: []*t2Variant{}}
	d.record(field, v, map[string]member{
		"name": to(&p.Name, d.str), "product_id": to(&p.ID, d.str),
		"variants": func(f string, val []byte) {
			d.dict(f, val, func(key, vf string, rec []byte) {
				nv := d.variant(vf, rec)
				nv.Key = key
				p.Variants = put(p.Variants, key, func(v *t2Variant) string { return v.Key }, nv)
			})
		},
	})
	return p
}

func (d *dbDecoder) variant(field string, v []byte) *t2Variant {
	x := &t2Variant{}
	d.record(field, v, map[string]member{
		"item_id": to(&x.ItemID, d.str), "options": to(&x.Options, d.options),
		"available": to(&x.Available, d.boolean), "price": to(&x.Price, d.num),
	})
	return x
}

func (d *dbDecoder) user(field string, v []byte) *t2User {
	u := &t2User{Payments: []*t2Payment{}}
	d.record(field, v, map[string]member{
		"user_id": to(&u.ID, d.str),
		"name": func(f string, val []byte) {
			d.record(f, val, map[string]member{"first_name": to(&u.FirstName, d.str), "last_name": to(&u.LastName, d.str)})
		},
		"address": to(&u.Address, d.address), "email": to(&u.Email, d.str),
		"payment_methods": func(f string, val []byte) {
			d.dict(f, val, func(key, pf string, rec []byte) {
				p := d.payment(pf, rec)
				p.Key = key
				u.Payments = put(u.Payments, key, func(p *t2Payment) string { return p.Key }, p)
			})
		},
		"orders": to(&u.Orders, d.strs),
	})
	return u
}

// payment reads a payment method: which members it has depends on its
// source, as each of the model's three kinds declares its own.
func (d *dbDecoder) payment(field string, v []byte) *t2Payment {
	p := &t2Payment{}
	raw := map[string][]byte{}
	keep := func(name string) member { return func(_ string, val []byte) { raw[name] = val } }
	d.record(field, v, map[string]member{
		"source": to(&p.Source, d.str), "id": to(&p.ID, d.str),
		"brand": keep("brand"), "last_four": keep("last_four"), "balance": keep("balance"),
	}, "brand", "last_four", "balance")
	if d.err != nil {
		return p
	}
	need := func(name string) []byte {
		val, ok := raw[name]
		if !ok {
			d.fail(field+"."+name, v, "missing (a %s has one)", p.Source)
		}
		return val
	}
	switch p.Source {
	case "credit_card":
		p.Brand = d.str(field+".brand", need("brand"))
		p.LastFour = d.str(field+".last_four", need("last_four"))
	case "gift_card":
		p.Balance = d.num(field+".balance", need("balance"))
	case "paypal":
	default:
		src, _ := jsontext.Lookup(v, "source")
		d.fail(field+".source", src, "%q: want credit_card, gift_card or paypal", p.Source)
	}
	return p
}

func (d *dbDecoder) order(field string, v []byte) *t2Order {
	o := &t2Order{Items: []*t2Item{}, Fulfillments: []t2Fulfillment{}, Payments: []*t2Transaction{}}
	d.record(field, v, map[string]member{
		"order_id": to(&o.ID, d.str), "user_id": to(&o.UserID, d.str), "address": to(&o.Address, d.address),
		"items": func(f string, val []byte) {
			d.list(f, val, func(ef string, el []byte) { o.Items = append(o.Items, d.item(ef, el)) })
		},
		"status": to(&o.Status, d.str),
		"fulfillments": func(f string, val []byte) {
			d.list(f, val, func(ef string, el []byte) {
				var ff t2Fulfillment
				d.record(ef, el, map[string]member{"tracking_id": to(&ff.TrackingIDs, d.strs), "item_ids": to(&ff.ItemIDs, d.strs)})
				o.Fulfillments = append(o.Fulfillments, ff)
			})
		},
		"payment_history": func(f string, val []byte) {
			d.list(f, val, func(ef string, el []byte) {
				t := &t2Transaction{}
				d.record(ef, el, map[string]member{
					"transaction_type": to(&t.Type, d.str), "amount": to(&t.Amount, d.num), "payment_method_id": to(&t.PaymentMethodID, d.str),
				})
				o.Payments = append(o.Payments, t)
			})
		},
		"cancel_reason":              to(&o.CancelReason, orNull(d.str)),
		"exchange_items":             to(&o.ExchangeItems, d.optStrs),
		"exchange_new_items":         to(&o.ExchangeNewItems, d.optStrs),
		"exchange_payment_method_id": to(&o.ExchangePaymentMethodID, orNull(d.str)),
		"exchange_price_difference":  to(&o.ExchangePriceDifference, orNull(d.num)),
		"return_items":               to(&o.ReturnItems, d.optStrs),
		"return_payment_method_id":   to(&o.ReturnPaymentMethodID, orNull(d.str)),
	}, "cancel_reason", "exchange_items", "exchange_new_items", "exchange_payment_method_id",
		"exchange_price_difference", "return_items", "return_payment_method_id")
	return o
}

func (d *dbDecoder) item(field string, v []byte) *t2Item {
	it := &t2Item{}
	d.record(field, v, map[string]member{
		"name": to(&it.Name, d.str), "product_id": to(&it.ProductID, d.str), "item_id": to(&it.ItemID, d.str),
		"price": to(&it.Price, d.num), "options": to(&it.Options, d.options),
	})
	return it
}

// clone returns a copy of the database that shares nothing it could
// change: a session's writes never reach another session, nor the
// database as loaded.
func (db *Tau2DB) clone() *Tau2DB {
	c := &Tau2DB{
		products:    make([]*t2Product, len(db.products)),
		users:       make([]*t2User, len(db.users)),
		orders:      make([]*t2Order, len(db.orders)),
		productByID: make(map[string]*t2Product, len(db.productByID)),
		userByID:    make(map[string]*t2User, len(db.userByID)),
		orderByID:   make(map[string]*t2Order, len(db.orderByID)),
	}
	// Products are never written, but a session's answers must not depend
	// on another's, so they are copied like the rest.
	same := map[any]any{}
	for i, p := range db.products {
		np := &t2Product{Name: p.Name, ID: p.ID, Variants: make([]*t2Variant, len(p.Variants))}
		for j, v := range p.Variants {
			nv := *v
			nv.Options = append([]t2Option(nil), v.Options...)
			np.Variants[j] = &nv
		}
		c.products[i], same[p] = np, np
	}
	for i, u := range db.users {
		nu := *u
		nu.Payments = make([]*t2Payment, len(u.Payments))
		for j, p := range u.Payments {
			np := *p
			nu.Payments[j] = &np
		}
		nu.Orders = append([]string(nil), u.Orders...)
		c.users[i], same[u] = &nu, &nu
	}
	for i, o := range db.orders {
		c.orders[i] = o.clone()
		same[o] = c.orders[i]
	}
	for k, p := range db.productByID {
		c.productByID[k] = same[p].(*t2Product)
	}
	for k, u := range db.userByID {
		c.userByID[k] = same[u].(*t2User)
	}
	for k, o := range db.orderByID {
		c.orderByID[k] = same[o].(*t2Order)
	}
	return c
}

func (o *t2Order) clone() *t2Order {
	n := *o
	n.Items = make([]*t2Item, len(o.Items))
	for i, it := range o.Items {
		ni := *it
		ni.Options = append([]t2Option(nil), it.Options...)
		n.Items[i] = &ni
	}
	n.Fulfillments = make([]t2Fulfillment, len(o.Fulfillments))
	for i, f := range o.Fulfillments {
		n.Fulfillments[i] = t2Fulfillment{TrackingIDs: cloneStrs(f.TrackingIDs), ItemIDs: cloneStrs(f.ItemIDs)}
	}
	n.Payments = make([]*t2Transaction, len(o.Payments))
	for i, t := range o.Payments {
		nt := *t
		n.Payments[i] = &nt
	}
	n.CancelReason = clonePtr(o.CancelReason)
	n.ExchangeItems = cloneStrs(o.ExchangeItems)
	n.ExchangeNewItems = cloneStrs(o.ExchangeNewItems)
	n.ExchangePaymentMethodID = clonePtr(o.ExchangePaymentMethodID)
	n.ExchangePriceDifference = clonePtr(o.ExchangePriceDifference)
	n.ReturnItems = cloneStrs(o.ReturnItems)
	n.ReturnPaymentMethodID = clonePtr(o.ReturnPaymentMethodID)
	return &n
}

// cloneStrs copies a list, keeping nil (null) apart from empty ([]).
func cloneStrs(s []string) []string {
	if s == nil {
		return nil
	}
	return append([]string{}, s...)
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// The answers: each record as model_dump writes it, fields in the model's
// order, optional ones as null.

func (a *t2Address) write(w *pyJSON) {
	w.beginObject()
	w.strField("address1", a.Address1)
	w.strField("address2", a.Address2)
	w.strField("city", a.City)
	w.strField("country", a.Country)
	w.strField("state", a.State)
	w.strField("zip", a.Zip)
	w.endObject()
}

func writeOptions(w *pyJSON, opts []t2Option) {
	w.beginObject()
	for _, o := range opts {
		w.key(o.Name)
		w.str(o.Value)
	}
	w.endObject()
}

func (p *t2Payment) write(w *pyJSON) {
	w.beginObject()
	w.strField("source", p.Source)
	w.strField("id", p.ID)
	switch p.Source {
	case "credit_card":
		w.strField("brand", p.Brand)
		w.strField("last_four", p.LastFour)
	case "gift_card":
		w.floatField("balance", p.Balance)
	}
	w.endObject()
}

func (u *t2User) write(w *pyJSON) {
	w.beginObject()
	w.strField("user_id", u.ID)
	w.key("name")
	w.beginObject()
	w.strField("first_name", u.FirstName)
	w.strField("last_name", u.LastName)
	w.endObject()
	w.key("address")
	u.Address.write(w)
	w.strField("email", u.Email)
	w.key("payment_methods")
	w.beginObject()
	for _, p := range u.Payments {
		w.key(p.Key)
		p.write(w)
	}
	w.endObject()
	w.key("orders")
	w.strs(u.Orders)
	w.endObject()
}

func (v *t2Variant) write(w *pyJSON) {
	w.beginObject()
	w.strField("item_id", v.ItemID)
	w.key("options")
	writeOptions(w, v.Options)
	w.key("available")
	w.boolean(v.Available)
	w.floatField("price", v.Price)
	w.endObject()
}

func (p *t2Product) write(w *pyJSON) {
	w.beginObject()
	w.strField("name", p.Name)
	w.strField("product_id", p.ID)
	w.key("variants")
	w.beginObject()
	for _, v := range p.Variants {
		w.key(v.Key)
		v.write(w)
	}
	w.endObject()
	w.endObject()
}

func (o *t2Order) write(w *pyJSON) {
	w.beginObject()
	w.strField("order_id", o.ID)
	w.strField("user_id", o.UserID)
	w.key("address")
	o.Address.write(w)
	w.key("items")
	w.beginArray()
	for _, it := range o.Items {
		w.beginObject()
		w.strField("name", it.Name)
		w.strField("product_id", it.ProductID)
		w.strField("item_id", it.ItemID)
		w.floatField("price", it.Price)
		w.key("options")
		writeOptions(w, it.Options)
		w.endObject()
	}
	w.endArray()
	w.strField("status", o.Status)
	w.key("fulfillments")
	w.beginArray()
	for _, f := range o.Fulfillments {
		w.beginObject()
		w.key("tracking_id")
		w.strs(f.TrackingIDs)
		w.key("item_ids")
		w.strs(f.ItemIDs)
		w.endObject()
	}
	w.endArray()
	w.key("payment_history")
	w.beginArray()
	for _, t := range o.Payments {
		w.beginObject()
		w.strField("transaction_type", t.Type)
		w.floatField("amount", t.Amount)
		w.strField("payment_method_id", t.PaymentMethodID)
		w.endObject()
	}
	w.endArray()
	w.key("cancel_reason")
	w.optStr(o.CancelReason)
	w.key("exchange_items")
	w.strs(o.ExchangeItems)
	w.key("exchange_new_items")
	w.strs(o.ExchangeNewItems)
	w.key("exchange_payment_method_id")
	w.optStr(o.ExchangePaymentMethodID)
	w.key("exchange_price_difference")
	w.optFloat(o.ExchangePriceDifference)
	w.key("return_items")
	w.strs(o.ReturnItems)
	w.key("return_payment_method_id")
	w.optStr(o.ReturnPaymentMethodID)
	w.endObject()
}
