package pydantic

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"strconv"
	"strings"
)

// Float validates a `float` field in pydantic's lax mode: a JSON number, a
// bool (as 1.0/0.0), or a string that parses as a float (surrounding
// whitespace, inf and nan allowed).
func Float(loc string, v any) (float64, *Error) {
	switch t := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err == nil || errors.Is(err, strconv.ErrRange) {
			return f, nil // Python floats overflow to inf
		}
	case bool:
		if t {
			return 1, nil
		}
		return 0, nil
	case string:
		if f, err := strconv.ParseFloat(strings.TrimSpace(t), 64); err == nil {
			return f, nil
		}
		return 0, &Error{Loc: loc, Msg: "Input should be a valid number, unable to parse string as a number", Type: "float_parsing", Input: v}
	}
	return 0, &Error{Loc: loc, Msg: "Input should be a valid number", Type: "float_type", Input: v}
}

// Falsy is Python truthiness for a decoded JSON value: None, False, "", 0,
// [] and {} are false.
func Falsy(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case bool:
		return !t
	case string:
		return t == ""
	case json.Number:
		f, err := t.Float64()
		return err == nil && f == 0
	case []any:
		return len(t) == 0
	case map[string]any:
		return len(t) == 0
	}
	return false
}

// List renders strings the way Python prints a list of them (each in
// single quotes; the form's options hold no quote).
func List(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = "'" + s + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// Query is request.args.to_dict() of a raw query string: each parameter's
// first value, in the order the query string names them.
func Query(rawQuery string) *Dict {
	d := &Dict{Vals: map[string]any{}}
	for _, pair := range strings.Split(rawQuery, "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		k, err1 := url.QueryUnescape(k)
		v, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			continue
		}
		if _, dup := d.Vals[k]; dup {
			continue
		}
		d.Keys = append(d.Keys, k)
		d.Vals[k] = v
	}
	return d
}

// Numeric is value (a decimal string) as Dify writes it after storing it in
// an sa.Numeric(precision, scale) column and reading it back: PostgreSQL
// rounds it to scale places (half away from zero), the driver returns a
// Decimal with exactly that exponent, and pydantic's JSON mode writes
// str(Decimal), which turns to scientific notation for small values:
// Numeric("0", 7) is "0E-7", Numeric("0.001289", 7) is "0.0012890". A value
// that is not a decimal number is returned as given.
func Numeric(value string, scale int) string {
	if s, ok := plainNumeric(strings.TrimSpace(value), scale); ok {
		return s
	}
	return ratNumeric(value, scale)
}

// plainNumeric is Numeric for the values Dify's usage carries ("0.0012890",
// "0", "-1.5"): an optional minus, digits, and at most scale decimals, so
// nothing is rounded and the coefficient is the digits themselves, padded
// to scale decimals. Anything else (an exponent, a plus sign, more decimals
// than scale, a bare point) reports false and goes to ratNumeric, to which
// FuzzNumeric holds it. It saves the big.Rat arithmetic a stored turn paid.
func plainNumeric(v string, scale int) (string, bool) {
	neg := strings.HasPrefix(v, "-")
	if neg {
		v = v[1:]
	}
	whole, frac, dotted := strings.Cut(v, ".")
	if whole == "" || (dotted && frac == "") || len(frac) > scale || len(v) > 64 || !allDigits(whole) || !allDigits(frac) {
		return "", false
	}
	const zeros = "0000000000000000000000000000000000000000000000000000000000000000"
	pad := scale - len(frac)
	if pad > len(zeros) {
		return "", false
	}
	var b [160]byte
	digits := append(append(append(b[:0], whole...), frac...), zeros[:pad]...)
	for len(digits) > 1 && digits[0] == '0' {
		digits = digits[1:]
	}
	sign := ""
	if neg && string(digits) != "0" {
		sign = "-"
	}
	return sign + decimalString(string(digits), -scale), true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ratNumeric is Numeric for any decimal string big.Rat reads.
func ratNumeric(value string, scale int) string {
	r, ok := new(big.Rat).SetString(strings.TrimSpace(value))
	if !ok || scale < 0 {
		return value
	}
	pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)
	r.Mul(r, new(big.Rat).SetInt(pow))
	// Round half away from zero: |num|*2 + den, divided by 2*den.
	num, den := new(big.Int).Abs(r.Num()), r.Denom()
	q := new(big.Int).Quo(new(big.Int).Add(new(big.Int).Lsh(num, 1), den), new(big.Int).Lsh(den, 1))
	sign := ""
	if r.Sign() < 0 && q.Sign() != 0 {
		sign = "-"
	}
	return sign + decimalString(q.String(), -scale)
}

// decimalString is Python's Decimal.__str__ (to_sci_string) of the
// coefficient digits and exponent: plain notation while the exponent is
// at most 0 and the number has fewer than six leading zeros after the
// point, scientific otherwise.
func decimalString(digits string, exp int) string {
	left := exp + len(digits)
	dot := 1
	if exp <= 0 && left > -6 {
		dot = left
	}
	var intPart, fracPart string
	switch {
	case dot <= 0:
		intPart, fracPart = "0", "."+strings.Repeat("0", -dot)+digits
	case dot >= len(digits):
		intPart = digits + strings.Repeat("0", dot-len(digits))
	default:
		intPart, fracPart = digits[:dot], "."+digits[dot:]
	}
	if left == dot {
		return intPart + fracPart
	}
	return fmt.Sprintf("%s%sE%+d", intPart, fracPart, left-dot)
}
