package pyjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"unicode/utf8"
)

// ErrUnsupported is wrapped by the error Marshal returns for a value it cannot write: a type
// not listed in [AppendValue], or a json.Number that is not a JSON number literal.
var ErrUnsupported = errors.New("value not supported")

// Member is one member of an [Object]: a key and its value.
type Member struct {
	Key   string
	Value any
}

// Object is a JSON object whose members keep their order, as a Python dict keeps insertion
// order. [Decode] returns one for every JSON object; [Marshal] writes the members in slice
// order. Marshal writes a repeated key as many times as it appears (a Python dict cannot hold
// one, so such an Object has no Python counterpart); Decode never returns one.
type Object []Member

// Marshal returns what Python's json.dumps(v) returns with default arguments, for the values
// listed in [AppendValue].
func Marshal(v any) ([]byte, error) {
	return AppendValue(nil, v)
}

// String is [Marshal] returning a string.
func String(v any) (string, error) {
	b, err := AppendValue(nil, v)
	return string(b), err
}

// AppendValue appends to dst what Python's json.dumps(v) writes with default arguments
// (separators ", " and ": ", ensure_ascii=True, allow_nan=True) and returns the extended slice.
// v may be, at any depth:
//
//   - nil: null; bool: true or false;
//   - string: in double quotes, escaped as CPython's py_encode_basestring_ascii does
//     (Lib/json/encoder.py): '"' and '\' as \" and \\; \n \r \t \b \f as those escapes;
//     every other character outside ' '..'~' (other control characters, DEL, all non-ASCII)
//     as \uXXXX with lowercase hex, a character beyond U+FFFF as a UTF-16 surrogate pair
//     ("😀" is "\ud83d\ude00"). A byte that is not part of valid UTF-8 is written as \ufffd;
//   - json.Number: a literal with no '.', 'e' or 'E' is a Python int, written in canonical
//     decimal form at any size ("-0" is "0"); any other is parsed as a Python float (float64,
//     correctly rounded, overflowing to infinity) and written as for float64 below. The
//     literals NaN, Infinity and -Infinity (as Decode returns them) are written as they are;
//   - float64, float32: as a Python float: the shortest decimal that reads back to the same
//     float64, as float.__repr__ writes it (fixed notation with at least one fractional
//     digit when the decimal exponent is in [-4, 16): 1.0, 0.0001, 1000000000000000.0; else
//     scientific with a signed exponent of at least two digits: 1e-05, 1e+16,
//     1.2345678901234567e+19), and NaN, Infinity and -Infinity as json.dumps writes them.
//     A float32 is widened to float64 first, as Python's float(numpy.float32(x)) would;
//   - int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, *big.Int: as a
//     Python int (a nil *big.Int is null);
//   - []any, []string: [a, b], or [] when empty or nil;
//   - Object: {"k": v, "k2": v2} in slice order, or {} when empty or nil;
//   - map[string]any: as Object with the keys sorted by code point, as json.dumps with
//     sort_keys=True would write a dict. Go maps have no order: to reproduce a Python dict's
//     insertion order, build an Object.
//
// Any other type (a struct, a typed map or slice, a json.Marshaler) is written as
// encoding/json marshals it, re-read with its key order kept: struct fields in declaration
// order. A value encoding/json cannot marshal fails with an error wrapping ErrUnsupported, and
// arrays and objects nested more than MaxDepth levels (including cyclic values) fail with an
// error wrapping ErrTooDeep.
// On error AppendValue returns dst as it was passed in.
func AppendValue(dst []byte, v any) ([]byte, error) {
	out, err := appendValue(dst, v, 0)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// appendValue appends v, which is enclosed by depth arrays and objects.
func appendValue(dst []byte, v any, depth int) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, v), nil
	case string:
		return appendString(dst, v), nil
	case json.Number:
		return appendNumber(dst, v)
	case float64:
		return appendFloat(dst, v), nil
	case float32:
		return appendFloat(dst, float64(v)), nil
	case int:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int8:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int16:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int32:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(dst, v, 10), nil
	case uint:
		return strconv.AppendUint(dst, uint64(v), 10), nil
	case uint8:
		return strconv.AppendUint(dst, uint64(v), 10), nil
	case uint16:
		return strconv.AppendUint(dst, uint64(v), 10), nil
	case uint32:
		return strconv.AppendUint(dst, uint64(v), 10), nil
	case uint64:
		return strconv.AppendUint(dst, v, 10), nil
	case *big.Int:
		if v == nil {
			return append(dst, "null"...), nil
		}
		return v.Append(dst, 10), nil
	case []any:
		return appendArray(dst, len(v), depth, func(dst []byte, i int) ([]byte, error) {
			return appendValue(dst, v[i], depth+1)
		})
	case []string:
		return appendArray(dst, len(v), depth, func(dst []byte, i int) ([]byte, error) {
			return appendString(dst, v[i]), nil
		})
	case Object:
		return appendObject(dst, v, depth)
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		// Byte order of UTF-8 is code point order, which is how Python sorts str keys.
		slices.Sort(keys)
		members := make(Object, len(keys))
		for i, k := range keys {
			members[i] = Member{Key: k, Value: v[k]}
		}
		return appendObject(dst, members, depth)
	}
	return appendViaJSON(dst, v, depth)
}

// appendViaJSON writes any other value as encoding/json would marshal it (structs with their
// fields in declaration order and json tags, json.Marshaler implementations, typed maps and
// slices), then as Python would write that JSON: the JSON is decoded with Decode, which keeps
// object key order, and appended. Numbers keep encoding/json's text (a float64 field holding 1
// is written 1, a Python int). Errors wrap ErrUnsupported (channels, functions, cycles).
func appendViaJSON(dst []byte, v any, depth int) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return dst, fmt.Errorf("pyjson: %w: cannot write a %T: %w", ErrUnsupported, v, err)
	}
	decoded, err := Decode(b)
	if err != nil {
		return dst, fmt.Errorf("pyjson: %w: a %T marshals to JSON pyjson cannot read: %w", ErrUnsupported, v, err)
	}
	return appendValue(dst, decoded, depth)
}

// MarshalJSON writes o as a JSON object with its members in slice order, so that an Object
// nested in a struct keeps its key order through appendViaJSON (and through encoding/json).
func (o Object) MarshalJSON() ([]byte, error) {
	buf := []byte{'{'}
	for i, m := range o {
		if i > 0 {
			buf = append(buf, ',')
		}
		k, err := json.Marshal(m.Key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.Value)
		if err != nil {
			return nil, err
		}
		buf = append(append(append(buf, k...), ':'), v...)
	}
	return append(buf, '}'), nil
}

// checkDepth fails when one more array or object inside depth others exceeds MaxDepth.
func checkDepth(depth int) error {
	if depth >= MaxDepth {
		return fmt.Errorf("pyjson: %w: more than %d nested arrays and objects (or a cycle)",
			ErrTooDeep, MaxDepth)
	}
	return nil
}

// appendArray writes an array of n items, the i-th appended by item.
func appendArray(dst []byte, n, depth int, item func(dst []byte, i int) ([]byte, error)) ([]byte, error) {
	if err := checkDepth(depth); err != nil {
		return dst, err
	}
	dst = append(dst, '[')
	for i := range n {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		var err error
		if dst, err = item(dst, i); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

// appendObject writes the members of o in order.
func appendObject(dst []byte, o Object, depth int) ([]byte, error) {
	if err := checkDepth(depth); err != nil {
		return dst, err
	}
	dst = append(dst, '{')
	for i, m := range o {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = appendString(dst, m.Key)
		dst = append(dst, ": "...)
		var err error
		if dst, err = appendValue(dst, m.Value, depth+1); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

const hexDigits = "0123456789abcdef"

// appendString writes s as CPython's py_encode_basestring_ascii (and the C encoder json.dumps
// uses by default) does: ' '..'~' as they are but for '"' and '\'; everything else escaped.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0 // s[start:i] is plain ASCII not yet appended
	for i := 0; i < len(s); {
		c := s[i]
		if ' ' <= c && c <= '~' && c != '"' && c != '\\' {
			i++
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"':
			dst = append(dst, `\"`...)
		case '\\':
			dst = append(dst, `\\`...)
		case '\n':
			dst = append(dst, `\n`...)
		case '\r':
			dst = append(dst, `\r`...)
		case '\t':
			dst = append(dst, `\t`...)
		case '\b':
			dst = append(dst, `\b`...)
		case '\f':
			dst = append(dst, `\f`...)
		default:
			r, size := utf8.DecodeRuneInString(s[i:]) // U+FFFD, size 1, for a bad byte
			i += size - 1
			if r > 0xffff {
				r -= 0x10000
				dst = appendU4(dst, 0xd800|(r>>10)&0x3ff)
				r = 0xdc00 | r&0x3ff
			}
			dst = appendU4(dst, r)
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendU4 writes the \uXXXX escape of the UTF-16 code unit r, in lowercase hex.
func appendU4(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u',
		hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}

// appendNumber writes the json.Number n as the Python int or float json.loads makes of it.
func appendNumber(dst []byte, n json.Number) ([]byte, error) {
	s := string(n)
	switch s {
	case "NaN", "Infinity", "-Infinity":
		return append(dst, s...), nil
	}
	if len(s) == 0 || scanNumber(s) != len(s) {
		return dst, fmt.Errorf("pyjson: %w: json.Number %q is not a JSON number", ErrUnsupported, s)
	}
	for _, c := range []byte(s) {
		if c == '.' || c == 'e' || c == 'E' {
			// ParseFloat rounds correctly, as Python's float() does; on overflow it
			// returns ±Inf along with an error that json.loads has no counterpart of.
			f, _ := strconv.ParseFloat(s, 64)
			return appendFloat(dst, f), nil
		}
	}
	// A JSON integer literal has no leading zeros, so it is already canonical but for "-0".
	if s == "-0" {
		s = "0"
	}
	return append(dst, s...), nil
}

// appendFloat writes f as json.dumps writes a Python float: float.__repr__, which is
// repr-style "r" formatting in CPython's Python/pystrtod.c, for finite values.
func appendFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	}
	// Both Go and Python (David Gay's dtoa, mode 0) pick the shortest digit string that
	// reads back as f, and the one nearest f among those.
	var buf [32]byte
	sci := strconv.AppendFloat(buf[:0], f, 'e', -1, 64) // [-]d[.ddd]e±XX
	e := slices.Index(sci, 'e')
	exp, _ := strconv.Atoi(string(sci[e+1:]))
	if exp < -4 || exp >= 16 {
		// Python writes the exponent as Go does: a sign and at least two digits.
		return append(dst, sci...)
	}
	mant := sci[:e]
	if mant[0] == '-' {
		dst = append(dst, '-')
		mant = mant[1:]
	}
	digits := make([]byte, 0, len(mant))
	digits = append(digits, mant[0])
	if len(mant) > 1 {
		digits = append(digits, mant[2:]...) // skip the '.'
	}
	if exp < 0 {
		// 0.000ddd: -exp-1 zeros between the point and the digits.
		dst = append(dst, "0."...)
		for range -exp - 1 {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	}
	// exp+1 digits before the point, padded with zeros; at least one digit after it.
	for len(digits) <= exp {
		digits = append(digits, '0')
	}
	dst = append(dst, digits[:exp+1]...)
	dst = append(dst, '.')
	if len(digits) == exp+1 {
		return append(dst, '0')
	}
	return append(dst, digits[exp+1:]...)
}
