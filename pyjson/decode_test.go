package pyjson_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/pyjson"
)

func TestDecodeValues(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want any
	}{
		{"null", "null", nil},
		{"true", " true ", true},
		{"false", "\t\r\nfalse\n", false},
		{"int literal kept", "-0", json.Number("-0")},
		{"float literal kept", "1.50E+01", json.Number("1.50E+01")},
		{"big int", "123456789012345678901234567890", json.Number("123456789012345678901234567890")},
		{"NaN", "NaN", json.Number("NaN")},
		{"Infinity", "[Infinity,-Infinity]", []any{json.Number("Infinity"), json.Number("-Infinity")}},
		{"string", `"abc"`, "abc"},
		{"empty string", `""`, ""},
		{"raw unicode", `"é😀"`, "é😀"},
		{"raw DEL", "\"\x7f\"", "\x7f"},
		{"escapes", `"\"\\\/\b\f\n\r\t"`, "\"\\/\b\f\n\r\t"},
		{"unicode escape", `"\u00e9\u00C9"`, "éÉ"},
		{"surrogate pair", `"\ud83d\ude00"`, "😀"},
		{"surrogate pair upper case", `"\uD83D\uDE00"`, "😀"},
		{"lone high surrogate", `"a\ud800b"`, "a\ufffdb"},
		{"lone low surrogate", `"\udc00"`, "\ufffd"},
		{"high surrogate then pair", `"\ud800\ud83d\ude00"`, "\ufffd😀"},
		{"high surrogate then BMP escape", `"\ud800\u0041"`, "\ufffdA"},
		{"reversed pair", `"\ude00\ud83d"`, "\ufffd\ufffd"},
		{"empty array", "[]", []any{}},
		{"empty object", " { } ", pyjson.Object{}},
		{"array", "[1, \"a\", [null], {}]", []any{json.Number("1"), "a", []any{nil}, pyjson.Object{}}},
		{"key order kept", `{"b":1,"a":2,"c":3}`,
			pyjson.Object{{"b", json.Number("1")}, {"a", json.Number("2")}, {"c", json.Number("3")}}},
		{"duplicate key: last value, first position", `{"a":1,"b":2,"a":3}`,
			pyjson.Object{{"a", json.Number("3")}, {"b", json.Number("2")}}},
		{"many duplicates", `{"x":1,"y":2,"x":3,"z":4,"y":5,"x":6}`,
			pyjson.Object{{"x", json.Number("6")}, {"y", json.Number("5")}, {"z", json.Number("4")}}},
		{"escaped duplicate key", `{"\u00e9":1,"é":2}`, pyjson.Object{{"é", json.Number("2")}}},
		{"nested", `{"a":{"b":[{"c":{}}]}}`,
			pyjson.Object{{"a", pyjson.Object{{"b", []any{pyjson.Object{{"c", pyjson.Object{}}}}}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pyjson.Decode([]byte(tt.in))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		offset int
	}{
		{"empty", "", 0},
		{"only space", "  ", 2},
		{"leading zero", "01", 1},
		{"dot without digits", "1.", 0},
		{"exponent without digits", "1e+", 0},
		{"leading dot", ".5", 0},
		{"plus sign", "+1", 0},
		{"lone minus", "-", 0},
		{"-NaN", "-NaN", 0},
		{"lowercase nan", "nan", 0},
		{"truncated literal", "tru", 0},
		{"extra data", "1 2", 2},
		{"extra literal", "truex", 4},
		{"trailing comma in array", "[1,]", 3},
		{"trailing comma in object", `{"a":1,}`, 7},
		{"missing comma", "[1 2]", 3},
		{"missing colon", `{"a" 1}`, 5},
		{"non-string key", "{1:2}", 1},
		{"single quotes", "{'a':1}", 1},
		{"unclosed array", "[", 1},
		{"unclosed object", `{"a":1`, 6},
		{"unterminated string", `"abc`, 0},
		{"unterminated escape", `"\`, 1},
		{"bad escape", `"\x"`, 1},
		{"short unicode escape", `"\u12"`, 1},
		{"bad hex", `"\u12g4"`, 1},
		{"raw tab in string", "\"a\tb\"", 2},
		{"raw newline in string", "\"\n\"", 1},
		{"invalid UTF-8 in string", "\"a\xffb\"", 2},
		{"encoded surrogate", "\"\xed\xa0\x80\"", 1},
		{"byte order mark", "\ufeff1", 0},
		{"non-breaking space", "\u00a01", 0},
		{"comment", "// x", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := pyjson.Decode([]byte(tt.in))
			require.ErrorIs(t, err, pyjson.ErrSyntax)
			var se *pyjson.SyntaxError
			require.True(t, errors.As(err, &se))
			assert.Equal(t, tt.offset, se.Offset, "error: %v", err)
		})
	}
}

func TestDecodeDepth(t *testing.T) {
	// deep returns n nested arrays and objects, alternating.
	deep := func(n int) []byte {
		inner := "null"
		if n%2 == 1 {
			inner = "[]"
		}
		return []byte(strings.Repeat(`[{"k":`, n/2) + inner + strings.Repeat("}]", n/2))
	}
	v, err := pyjson.Decode(deep(pyjson.MaxDepth))
	require.NoError(t, err)
	out, err := pyjson.Marshal(v)
	require.NoError(t, err, "whatever Decode returns, Marshal can write")
	assert.Equal(t, strings.Repeat(`[{"k": `, pyjson.MaxDepth/2)+"null"+strings.Repeat("}]", pyjson.MaxDepth/2), string(out))

	_, err = pyjson.Decode(deep(pyjson.MaxDepth + 1))
	require.ErrorIs(t, err, pyjson.ErrTooDeep)

	// Hostile input: far deeper than the limit, and never closed.
	_, err = pyjson.Decode([]byte(strings.Repeat("[", 10_000_000)))
	require.ErrorIs(t, err, pyjson.ErrTooDeep)
}

func TestDecodeHugeString(t *testing.T) {
	s := strings.Repeat("ab\\n\u00e9😀", 1<<18)
	v, err := pyjson.Decode([]byte(`"` + s + `"`))
	require.NoError(t, err)
	assert.Equal(t, strings.ReplaceAll(s, `\n`, "\n"), v)
}

func TestDecodeReader(t *testing.T) {
	v, err := pyjson.DecodeReader(strings.NewReader(`{"a": [1]}`))
	require.NoError(t, err)
	assert.Equal(t, pyjson.Object{{"a", []any{json.Number("1")}}}, v)

	readErr := errors.New("disk on fire")
	_, err = pyjson.DecodeReader(iotest.ErrReader(readErr))
	require.ErrorIs(t, err, readErr)
}

// TestDumpsLoads checks json.dumps(json.loads(in)) on hand-checked cases.
func TestDumpsLoads(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{`{"b":1,"a":[1.0,1E5,-0,-0.0,1e16,1e15,0.1e1]}`,
			`{"b": 1, "a": [1.0, 100000.0, 0, -0.0, 1e+16, 1000000000000000.0, 1.0]}`},
		{`{"a":1,"b":2,"a":{"c":[]}}`, `{"a": {"c": []}, "b": 2}`},
		{`["\u00e9","\ud83d\ude00","\/","\u007f","\u001F"]`,
			`["\u00e9", "\ud83d\ude00", "/", "\u007f", "\u001f"]`},
		{`[123456789012345678901234567890,-1e400,NaN,5e-324,1e-5,2.5e-7]`,
			`[123456789012345678901234567890, -Infinity, NaN, 5e-324, 1e-05, 2.5e-07]`},
		{` { "x" : [ ] , "y" : { } } `, `{"x": [], "y": {}}`},
		{`"中"`, `"\u4e2d"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			v, err := pyjson.Decode([]byte(tt.in))
			require.NoError(t, err)
			got, err := pyjson.String(v)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
