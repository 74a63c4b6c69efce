package pyjson_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/pyjson"
)

// FuzzRoundTrip checks that Decode never panics, that Marshal writes everything Decode
// returns, as ASCII, and that the output decodes again to an equal value (numbers compared
// by the Python value they stand for) and is a fixed point of Decode then Marshal.
func FuzzRoundTrip(f *testing.F) {
	for _, seed := range []string{
		`{"b":1,"a":[1.0,1E5,-0,-0.0,1e16],"b":{"c":null}}`,
		`["\u00e9\ud83d\ude00\ud800\u007f\/", "😀", true, false]`,
		`[123456789012345678901234567890, 1e400, -1e-400, NaN, Infinity, -Infinity, 5e-324]`,
		`[[[[{"k":[{}]}]]]]`,
		`"\"\\\b\f\n\r\t\u0000"`,
		`{"a":1,"a":2,"":3}`,
		"[1,]",
		"\"\xff\"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := pyjson.Decode(data)
		if err != nil {
			if !errors.Is(err, pyjson.ErrSyntax) && !errors.Is(err, pyjson.ErrTooDeep) {
				t.Fatalf("Decode error wraps neither ErrSyntax nor ErrTooDeep: %v", err)
			}
			return
		}
		out, err := pyjson.Marshal(v)
		require.NoError(t, err)
		for _, c := range out {
			require.Less(t, c, byte(0x80), "json.dumps output is ASCII: %q", out)
		}
		v2, err := pyjson.Decode(out)
		require.NoError(t, err, "output %q", out)
		require.Equal(t, pythonValue(t, v), pythonValue(t, v2))
		out2, err := pyjson.Marshal(v2)
		require.NoError(t, err)
		require.Equal(t, string(out), string(out2))
	})
}

// pythonValue returns v with each json.Number replaced by the text of the Python int or float
// it stands for, so that "1E5" and "100000.0" compare equal.
func pythonValue(t *testing.T, v any) any {
	switch v := v.(type) {
	case json.Number:
		s, err := pyjson.String(v)
		require.NoError(t, err)
		return json.Number(s)
	case []any:
		out := make([]any, len(v))
		for i, item := range v {
			out[i] = pythonValue(t, item)
		}
		return out
	case pyjson.Object:
		out := make(pyjson.Object, len(v))
		for i, m := range v {
			out[i] = pyjson.Member{Key: m.Key, Value: pythonValue(t, m.Value)}
		}
		return out
	}
	return v
}
