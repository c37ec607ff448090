package demo

import (
	"math"
	"math/big"
	"strconv"
	"strings"
)

// calc is τ²-bench's calculate: str(round(float(eval(expression)), 2)) over
// an expression of digits, + - * / ( ) . and spaces. It evaluates what
// Python evaluates for such text, as Python does: integers exactly, true
// division (/) correctly rounded, floor division (//) and powers (**),
// unary signs, and its operators' precedence; its errors are Python's
// messages for the cases an agent meets (a syntax error, division by zero,
// a number too large for a float).
func calc(expr string) (string, error) {
	for _, c := range expr {
		if !strings.ContainsRune("0123456789+-*/(). ", c) {
			return "", errorf("Invalid characters in expression")
		}
	}
	p := &calcParser{toks: calcTokens(expr)}
	if p.toks == nil {
		return "", errorf("invalid syntax (<string>, line 1)")
	}
	v, err := p.expr()
	if err == nil && p.i < len(p.toks) {
		err = errSyntax
	}
	if err == errSyntax {
		err = p.syntaxError()
	}
	if err != nil {
		return "", err
	}
	f, err := v.float()
	if err != nil {
		return "", err
	}
	f = pyRound2(f)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return strings.ToLower(strconv.FormatFloat(f, 'g', -1, 64)), nil // Python's str: inf, -inf, nan
	}
	return string(appendPyFloat(nil, f)), nil
}

// calcNum is a Python number: an int (exact) or a float.
type calcNum struct {
	i *big.Int // nil for a float
	f float64
}

// maxIntBits bounds the integers calc computes: past a float's range,
// float() would fail anyway.
const maxIntBits = 1100

var errTooLarge = errorf("int too large to convert to float")

func (n calcNum) float() (float64, error) {
	if n.i == nil {
		return n.f, nil
	}
	f, _ := new(big.Float).SetInt(n.i).Float64()
	if math.IsInf(f, 0) {
		return 0, errTooLarge
	}
	return f, nil
}

type calcParser struct {
	toks []string
	i    int
}

// calcTokens splits an expression into numbers and operators, or returns
// nil when a number is malformed.
func calcTokens(s string) []string {
	toks := []string{}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ':
			i++
		case c == '*' || c == '/':
			if i+1 < len(s) && s[i+1] == c {
				toks = append(toks, s[i:i+2])
				i += 2
			} else {
				toks = append(toks, s[i:i+1])
				i++
			}
		case c == '+' || c == '-' || c == '(' || c == ')':
			toks = append(toks, s[i:i+1])
			i++
		default: // a digit or '.'
			j := i
			dots := 0
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
				if s[j] == '.' {
					dots++
				}
				j++
			}
			if dots > 1 || s[i:j] == "." {
				return nil
			}
			toks = append(toks, s[i:j])
			i = j
		}
	}
	return toks
}

func (p *calcParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

var errSyntax = errorf("invalid syntax (<string>, line 1)")

// syntaxError words the syntax error the parser stopped at as Python's
// tokenizer does for parentheses: a ')' that closes nothing, at or before
// where parsing stopped, or a '(' still open at the end.
func (p *calcParser) syntaxError() error {
	depth := 0
	for i, t := range p.toks {
		switch t {
		case "(":
			depth++
		case ")":
			depth--
		}
		if depth < 0 && i <= p.i {
			return errorf("unmatched ')' (<string>, line 1)")
		}
	}
	if depth > 0 && p.i >= len(p.toks) {
		return errorf("'(' was never closed (<string>, line 1)")
	}
	return errSyntax
}

// expr := term (('+' | '-') term)*
func (p *calcParser) expr() (calcNum, error) {
	v, err := p.term()
	for err == nil && (p.peek() == "+" || p.peek() == "-") {
		op := p.toks[p.i]
		p.i++
		var r calcNum
		if r, err = p.term(); err == nil {
			v, err = arith(op, v, r)
		}
	}
	return v, err
}

// term := factor (('*' | '/' | '//') factor)*
func (p *calcParser) term() (calcNum, error) {
	v, err := p.factor()
	for err == nil && (p.peek() == "*" || p.peek() == "/" || p.peek() == "//") {
		op := p.toks[p.i]
		p.i++
		var r calcNum
		if r, err = p.factor(); err == nil {
			v, err = arith(op, v, r)
		}
	}
	return v, err
}

// factor := ('+' | '-') factor | power
func (p *calcParser) factor() (calcNum, error) {
	switch p.peek() {
	case "+":
		p.i++
		return p.factor()
	case "-":
		p.i++
		v, err := p.factor()
		if err != nil {
			return v, err
		}
		if v.i != nil {
			return calcNum{i: new(big.Int).Neg(v.i)}, nil
		}
		return calcNum{f: -v.f}, nil
	}
	return p.power()
}

// power := atom ['**' factor]
func (p *calcParser) power() (calcNum, error) {
	v, err := p.atom()
	if err != nil || p.peek() != "**" {
		return v, err
	}
	p.i++
	e, err := p.factor()
	if err != nil {
		return v, err
	}
	return arith("**", v, e)
}

// atom := number | '(' expr ')'
func (p *calcParser) atom() (calcNum, error) {
	t := p.peek()
	switch {
	case t == "(":
		p.i++
		v, err := p.expr()
		if err != nil {
			return v, err
		}
		if p.peek() != ")" {
			return v, errSyntax
		}
		p.i++
		return v, nil
	case t == "" || t[0] != '.' && (t[0] < '0' || t[0] > '9'):
		return calcNum{}, errSyntax
	}
	p.i++
	if strings.Contains(t, ".") {
		f, err := strconv.ParseFloat(t, 64)
		if err != nil {
			return calcNum{}, errSyntax
		}
		return calcNum{f: f}, nil
	}
	if len(strings.TrimLeft(t, "0")) > 0 && t[0] == '0' {
		return calcNum{}, errorf("leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers (<string>, line 1)")
	}
	i, _ := new(big.Int).SetString(t, 10)
	if i.BitLen() > maxIntBits {
		return calcNum{}, errTooLarge
	}
	return calcNum{i: i}, nil
}

// arith applies a binary operator as Python does to ints and floats.
func arith(op string, a, b calcNum) (calcNum, error) {
	if a.i != nil && b.i != nil {
		return intArith(op, a.i, b.i)
	}
	x, err := a.float()
	if err != nil {
		return calcNum{}, err
	}
	y, err := b.float()
	if err != nil {
		return calcNum{}, err
	}
	switch op {
	case "+":
		return calcNum{f: x + y}, nil
	case "-":
		return calcNum{f: x - y}, nil
	case "*":
		return calcNum{f: x * y}, nil
	case "/":
		if y == 0 {
			return calcNum{}, errorf("float division by zero")
		}
		return calcNum{f: x / y}, nil
	case "//":
		if y == 0 {
			return calcNum{}, errorf("float floor division by zero")
		}
		return calcNum{f: math.Floor(x / y)}, nil
	}
	// "**"
	if x == 0 && y < 0 {
		return calcNum{}, errorf("0.0 cannot be raised to a negative power")
	}
	if x < 0 && y != math.Trunc(y) {
		return calcNum{}, errorf("float() argument must be a string or a real number, not 'complex'")
	}
	r := math.Pow(x, y)
	if math.IsInf(r, 0) {
		return calcNum{}, errorf("(34, 'Numerical result out of range')")
	}
	return calcNum{f: r}, nil
}

func intArith(op string, x, y *big.Int) (calcNum, error) {
	r := new(big.Int)
	switch op {
	case "+":
		r.Add(x, y)
	case "-":
		r.Sub(x, y)
	case "*":
		r.Mul(x, y)
	case "/":
		if y.Sign() == 0 {
			return calcNum{}, errorf("division by zero")
		}
		f, _ := new(big.Rat).SetFrac(x, y).Float64()
		return calcNum{f: f}, nil
	case "//":
		if y.Sign() == 0 {
			return calcNum{}, errorf("integer division or modulo by zero")
		}
		r = floorDiv(x, y)
	case "**":
		if y.Sign() < 0 {
			if x.Sign() == 0 {
				return calcNum{}, errorf("0.0 cannot be raised to a negative power")
			}
			bx, _ := new(big.Float).SetInt(x).Float64()
			by, _ := new(big.Float).SetInt(y).Float64()
			return calcNum{f: math.Pow(bx, by)}, nil
		}
		if x.CmpAbs(big.NewInt(1)) > 0 && (!y.IsInt64() || int64(x.BitLen()-1)*y.Int64() > maxIntBits) {
			return calcNum{}, errTooLarge
		}
		r.Exp(x, y, nil)
	}
	if r.BitLen() > maxIntBits {
		return calcNum{}, errTooLarge
	}
	return calcNum{i: r}, nil
}

// floorDiv is Python's // on ints: the quotient rounded toward minus
// infinity.
func floorDiv(x, y *big.Int) *big.Int {
	q, m := new(big.Int).QuoRem(x, y, new(big.Int))
	if m.Sign() != 0 && (m.Sign() < 0) != (y.Sign() < 0) {
		q.Sub(q, big.NewInt(1))
	}
	return q
}
