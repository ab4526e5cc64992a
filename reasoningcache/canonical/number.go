package canonical

import (
	"math"
	"strconv"
	"unsafe"
)

// canonNumber checks the JSON number text num (already validated against
// the RFC 8259 grammar) and returns its RFC 8785 form. When num is already
// canonical it returns same=true and does not touch dst; otherwise the
// canonical text is appended to dst. ok is false when the number is not
// exactly representable: its decimal value differs from the shortest
// round-trip form of the nearest IEEE 754 double, it overflows, or it is a
// negative zero (RFC 8785 would silently print it as 0).
func canonNumber(dst, num []byte) (out []byte, same, ok bool) {
	if isShortInt(num) {
		return dst, true, true
	}
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(num), len(num)), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, false, false
	}
	if num[0] == '-' && f == 0 {
		return dst, false, false
	}
	start := len(dst)
	dst = appendES(dst, f)
	text := dst[start:]
	if !sameDecimal(num, text) {
		return dst[:start], false, false
	}
	if string(text) == string(num) {
		return dst[:start], true, true
	}
	return dst, false, true
}

// isShortInt reports whether num is an integer of at most 15 digits without
// a redundant sign or leading zero: such numbers are exact doubles whose
// ECMAScript form is the text itself.
func isShortInt(num []byte) bool {
	i := 0
	if len(num) > 0 && num[0] == '-' {
		i = 1
	}
	digits := num[i:]
	if len(digits) == 0 || len(digits) > 15 {
		return false
	}
	if digits[0] == '0' {
		return len(digits) == 1 && i == 0
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// appendES appends the ECMAScript Number::toString form of the finite
// double f, which is the RFC 8785 number serialization. It is the same rule
// encoding/json uses for float64.
func appendES(dst []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// decimal is the exact value of a JSON number: sign, significant digits
// (no leading or trailing zeros) and the position of the decimal point
// relative to the first digit (value = 0.d1d2... × 10^point).
type decimal struct {
	neg    bool
	digits [24]byte
	nd     int   // number of significant digits; > len(digits) means "too long to matter"
	point  int64 // decimal exponent
}

// parseDecimal reads a JSON number (grammar already checked) exactly.
func parseDecimal(s []byte) decimal {
	var x decimal
	i := 0
	if i < len(s) && s[i] == '-' {
		x.neg = true
		i++
	}
	intStart := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	intEnd := i
	fracStart, fracEnd := i, i
	if i < len(s) && s[i] == '.' {
		i++
		fracStart = i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		fracEnd = i
	}
	var exp int64
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		for ; i < len(s); i++ {
			if exp < 1e12 {
				exp = exp*10 + int64(s[i]-'0')
			}
		}
		if eneg {
			exp = -exp
		}
	}
	x.point = int64(intEnd-intStart) + exp
	leading := true
	count, lastNZ := 0, 0
	visit := func(c byte) {
		if leading {
			if c == '0' {
				x.point--
				return
			}
			leading = false
		}
		if count < len(x.digits) {
			x.digits[count] = c
		}
		count++
		if c != '0' {
			lastNZ = count
		}
	}
	for _, c := range s[intStart:intEnd] {
		visit(c)
	}
	for _, c := range s[fracStart:fracEnd] {
		visit(c)
	}
	x.nd = lastNZ
	return x
}

// sameDecimal reports whether two JSON number texts denote the same
// decimal value.
func sameDecimal(a, b []byte) bool {
	x, y := parseDecimal(a), parseDecimal(b)
	if x.nd == 0 || y.nd == 0 {
		return x.nd == y.nd
	}
	if x.neg != y.neg || x.nd != y.nd || x.point != y.point || x.nd > len(x.digits) {
		return false
	}
	return string(x.digits[:x.nd]) == string(y.digits[:y.nd])
}
