package pyjson_test

import (
	"fmt"

	"github.com/gojev/gojev/pyjson"
)

// An Object keeps its members in order, as a Python dict built in the same order does, so the
// text matches json.dumps of that dict byte for byte.
func ExampleString() {
	payload := pyjson.Object{
		{Key: "evidence", Value: "charged twice"},
		{Key: "criterion", Value: "Which queue?"},
		{Key: "options", Value: []any{
			pyjson.Object{{Key: "letter", Value: "A"}, {Key: "description", Value: "Billing and refunds."}},
		}},
	}
	s, err := pyjson.String(payload)
	if err != nil {
		panic(err)
	}
	fmt.Println(s)
	// Output:
	// {"evidence": "charged twice", "criterion": "Which queue?", "options": [{"letter": "A", "description": "Billing and refunds."}]}
}

// Decode keeps key order; a repeated key keeps its first position and its last value, as
// json.loads does. Numbers come back as written and are rewritten as Python would.
func ExampleDecode() {
	v, err := pyjson.Decode([]byte(`{"b": 1E5, "a": "caf\u00e9 😀", "b": [1.0, 1e16, -0]}`))
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q\n", v)
	s, err := pyjson.String(v)
	if err != nil {
		panic(err)
	}
	fmt.Println(s)
	// Output:
	// [{"b" ["1.0" "1e16" "-0"]} {"a" "café 😀"}]
	// {"b": [1.0, 1e+16, 0], "a": "caf\u00e9 \ud83d\ude00"}
}
