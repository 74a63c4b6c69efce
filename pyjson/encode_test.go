package pyjson_test

import (
	"encoding/json"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/pyjson"
)

// The expectations below were checked by hand against CPython 3.11's json.dumps.

func TestStringEscapes(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", `""`},
		{"ascii", "Hello, world ~", `"Hello, world ~"`},
		{"quote and backslash", `say "hi" \o/`, `"say \"hi\" \\o/"`},
		{"slash not escaped", "a/b", `"a/b"`},
		{"short escapes", "\n\r\t\b\f", `"\n\r\t\b\f"`},
		{"other control characters", "\x00\x01\x1b\x1f", `"\u0000\u0001\u001b\u001f"`},
		{"DEL escaped like every char outside ' '..'~'", "a\x7fb", `"a\u007fb"`},
		{"latin-1", "é", `"\u00e9"`},
		{"CJK", "中文", `"\u4e2d\u6587"`},
		{"line separators", "\u2028\u2029", `"\u2028\u2029"`},
		{"BOM and noncharacter", "\ufeff\uffff", `"\ufeff\uffff"`},
		{"replacement character", "\ufffd", `"\ufffd"`},
		{"emoji as surrogate pair", "😀", `"\ud83d\ude00"`},
		{"first astral", "\U00010000", `"\ud800\udc00"`},
		{"last code point", "\U0010ffff", `"\udbff\udfff"`},
		{"mixed", "naïve 😀 \"x\"\n", `"na\u00efve \ud83d\ude00 \"x\"\n"`},
		{"invalid byte", "a\xffb", `"a\ufffdb"`},
		{"truncated sequence", "a\xc3", `"a\ufffd"`},
		{"UTF-8 encoded surrogate is three bad bytes", "\xed\xa0\x80", `"\ufffd\ufffd\ufffd"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pyjson.String(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestNumbers(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want string
	}{
		// json.Number without '.', 'e', 'E' is a Python int.
		{"int", json.Number("42"), "42"},
		{"negative int", json.Number("-7"), "-7"},
		{"minus zero int", json.Number("-0"), "0"},
		{"big int", json.Number("123456789012345678901234567890"), "123456789012345678901234567890"},
		{"big negative int", json.Number("-98765432109876543210987654321098765"), "-98765432109876543210987654321098765"},
		// Anything else is a Python float, written as float.__repr__.
		{"one", json.Number("1.0"), "1.0"},
		{"trailing zeros", json.Number("1.50"), "1.5"},
		{"exponent", json.Number("1E5"), "100000.0"},
		{"exponent with plus", json.Number("1e+5"), "100000.0"},
		{"1e15 fixed", json.Number("1e15"), "1000000000000000.0"},
		{"1e16 scientific", json.Number("1e16"), "1e+16"},
		{"just below 1e16", json.Number("9999999999999998"), "9999999999999998"},
		{"just below 1e16 as float", json.Number("9999999999999998.0"), "9999999999999998.0"},
		{"0.0001 fixed", json.Number("0.0001"), "0.0001"},
		{"1e-05 scientific", json.Number("0.00001"), "1e-05"},
		{"small", json.Number("1.5e-7"), "1.5e-07"},
		{"2.5e-7", json.Number("2.5e-7"), "2.5e-07"},
		{"big mantissa", json.Number("12345678901234567890.0"), "1.2345678901234567e+19"},
		{"minus zero float", json.Number("-0.0"), "-0.0"},
		{"zero with exponent", json.Number("0e0"), "0.0"},
		{"tenth", json.Number("0.1"), "0.1"},
		{"sum", json.Number("0.30000000000000004"), "0.30000000000000004"},
		{"1e22", json.Number("1e22"), "1e+22"},
		{"1e308", json.Number("1e308"), "1e+308"},
		{"max float", json.Number("1.7976931348623157e308"), "1.7976931348623157e+308"},
		{"smallest subnormal", json.Number("5e-324"), "5e-324"},
		{"rounds to subnormal", json.Number("2.4703282292062328e-324"), "5e-324"},
		{"underflow", json.Number("1e-400"), "0.0"},
		{"negative underflow", json.Number("-1e-400"), "-0.0"},
		{"overflow", json.Number("1e400"), "Infinity"},
		{"negative overflow", json.Number("-1e400"), "-Infinity"},
		{"NaN literal", json.Number("NaN"), "NaN"},
		{"Infinity literal", json.Number("Infinity"), "Infinity"},
		{"-Infinity literal", json.Number("-Infinity"), "-Infinity"},
		{"2^53+1 rounds", json.Number("9007199254740993.0"), "9007199254740992.0"},
		// Go numbers.
		{"float64", 3.14, "3.14"},
		{"float64 whole", 2.0, "2.0"},
		{"float64 -0", math.Copysign(0, -1), "-0.0"},
		{"float64 NaN", math.NaN(), "NaN"},
		{"float64 +Inf", math.Inf(1), "Infinity"},
		{"float64 -Inf", math.Inf(-1), "-Infinity"},
		{"float64 1e-4", 1e-4, "0.0001"},
		{"float64 123.456", 123.456, "123.456"},
		{"float64 0.000123", 0.000123, "0.000123"},
		{"float32 widened", float32(0.1), "0.10000000149011612"},
		{"int", -12, "-12"},
		{"int8", int8(-128), "-128"},
		{"int16", int16(300), "300"},
		{"int32", int32(-70000), "-70000"},
		{"int64 min", int64(math.MinInt64), "-9223372036854775808"},
		{"uint", uint(7), "7"},
		{"uint8", uint8(255), "255"},
		{"uint16", uint16(65535), "65535"},
		{"uint32", uint32(4294967295), "4294967295"},
		{"uint64 max", uint64(math.MaxUint64), "18446744073709551615"},
		{"big.Int", new(big.Int).Exp(big.NewInt(10), big.NewInt(30), nil), "1000000000000000000000000000000"},
		{"big.Int negative", big.NewInt(-5), "-5"},
		{"nil big.Int", (*big.Int)(nil), "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pyjson.String(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestMarshalValues(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"null", nil, "null"},
		{"true", true, "true"},
		{"false", false, "false"},
		{"empty array", []any{}, "[]"},
		{"nil array", []any(nil), "[]"},
		{"array", []any{json.Number("1"), json.Number("2")}, "[1, 2]"},
		{"mixed array", []any{1, "a", nil, true, 1.5}, `[1, "a", null, true, 1.5]`},
		{"strings", []string{"x", "é"}, `["x", "\u00e9"]`},
		{"nil strings", []string(nil), "[]"},
		{"empty object", pyjson.Object{}, "{}"},
		{"nil object", pyjson.Object(nil), "{}"},
		{"object keeps order", pyjson.Object{{"b", 1}, {"a", 2}}, `{"b": 1, "a": 2}`},
		{"escaped key", pyjson.Object{{"\"é\"", nil}}, `{"\"\u00e9\"": null}`},
		{"map sorted by code point", map[string]any{"b": 1, "a": 2, "é": 3, "Z": 4, "😀": 5, "\uffff": 6},
			`{"Z": 4, "a": 2, "b": 1, "\u00e9": 3, "\uffff": 6, "\ud83d\ude00": 5}`},
		{"nil map", map[string]any(nil), "{}"},
		{"nested", pyjson.Object{
			{"list", []any{[]any{}, pyjson.Object{}, []any{pyjson.Object{{"k", []string{"v"}}}}}},
			{"map", map[string]any{"x": []any{nil}}},
		}, `{"list": [[], {}, [{"k": ["v"]}]], "map": {"x": [null]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pyjson.String(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			b, err := pyjson.Marshal(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(b))
		})
	}
}

func TestMarshalErrors(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want error
	}{
		{"channel", make(chan int), pyjson.ErrUnsupported},
		{"func in a struct", struct{ F func() }{func() {}}, pyjson.ErrUnsupported},
		{"nested unsupported", []any{1, pyjson.Object{{"k", make(chan int)}}}, pyjson.ErrUnsupported},
		{"non-number json.Number", json.Number("abc"), pyjson.ErrUnsupported},
		{"empty json.Number", json.Number(""), pyjson.ErrUnsupported},
		{"leading zero json.Number", json.Number("01"), pyjson.ErrUnsupported},
		{"spaced json.Number", json.Number(" 1"), pyjson.ErrUnsupported},
		{"-NaN json.Number", json.Number("-NaN"), pyjson.ErrUnsupported},
		{"too deep", nestArrays(pyjson.MaxDepth + 1), pyjson.ErrTooDeep},
		{"cycle", cycle(), pyjson.ErrTooDeep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := pyjson.Marshal(tt.in)
			require.ErrorIs(t, err, tt.want)
		})
	}
}

// Go values outside pyjson's own types are written as encoding/json marshals them, then as
// json.dumps writes that JSON: struct fields in declaration order (json tags honoured), an
// Object nested in a struct in its own order, typed slices and pointers followed.
func TestMarshalGoValuesThroughEncodingJSON(t *testing.T) {
	type inner struct {
		Zeta  int    `json:"zeta"`
		Alpha string `json:"alpha,omitempty"`
	}
	type ticket struct {
		Message string         `json:"message"`
		Tags    []string       `json:"tags"`
		Inner   *inner         `json:"inner"`
		Extra   pyjson.Object  `json:"extra"`
		Price   float64        `json:"price"`
		Counts  map[string]int `json:"counts"`
	}
	v := ticket{Message: "café <b>", Tags: []string{"x"}, Inner: &inner{Zeta: 2},
		Extra: pyjson.Object{{"b", 1}, {"a", true}}, Price: 2.5, Counts: map[string]int{"z": 1, "a": 2}}
	got, err := pyjson.String(v)
	require.NoError(t, err)
	assert.Equal(t, `{"message": "caf\u00e9 <b>", "tags": ["x"], "inner": {"zeta": 2}, "extra": {"b": 1, "a": true}, "price": 2.5, "counts": {"a": 2, "z": 1}}`, got)
	got, err = pyjson.String([]int{3, 1})
	require.NoError(t, err)
	assert.Equal(t, "[3, 1]", got)
}

func TestMarshalMaxDepth(t *testing.T) {
	got, err := pyjson.String(nestArrays(pyjson.MaxDepth))
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("[", pyjson.MaxDepth)+strings.Repeat("]", pyjson.MaxDepth), got)
}

func TestAppendValue(t *testing.T) {
	dst := []byte("prompt: ")
	got, err := pyjson.AppendValue(dst, pyjson.Object{{"q", "é?"}})
	require.NoError(t, err)
	assert.Equal(t, `prompt: {"q": "\u00e9?"}`, string(got))

	got, err = pyjson.AppendValue(dst, []any{"partial", make(chan int)})
	require.ErrorIs(t, err, pyjson.ErrUnsupported)
	assert.Equal(t, "prompt: ", string(got), "on error dst comes back as it was")
}

// nestArrays returns n arrays, each holding the next; the innermost is empty.
func nestArrays(n int) any {
	v := []any{}
	for range n - 1 {
		v = []any{v}
	}
	return v
}

// cycle returns an array that holds itself.
func cycle() any {
	v := make([]any, 1)
	v[0] = v
	return v
}
