package main

import (
	"encoding/json"
	"fmt"

	"github.com/gojev/gojev"
)

// unencodable is the error record that replaces a record JSON cannot encode, keeping its id.
func unencodable(rec any, lineNo int, err error) errorRecord {
	var id json.RawMessage
	switch r := rec.(type) {
	case lineResult:
		id = r.ID
	case *gojev.Result:
		id = r.ID
	case renderRecord:
		id, _ = r.ID.(json.RawMessage)
	}
	if !json.Valid(id) {
		id = json.RawMessage("null")
	}
	return errorRecord{ID: id, Line: lineNo, Error: fmt.Sprintf("cannot write the result: %v", err)}
}
