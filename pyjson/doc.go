// Package pyjson writes JSON byte-for-byte as Python's json.dumps with default arguments does,
// and decodes JSON keeping object key order, so that text built in Go (LLM prompts, most of
// all) can be byte-identical to text built by a Python reference implementation.
//
// # Decoding
//
// [Decode] reads one JSON value, as json.loads does, into nil, bool, string, [json.Number]
// (the literal exactly as written), []any or [Object] (members in input order). A repeated key
// keeps its first position and takes its last value, as json.loads does when it fills a dict.
// Like json.loads, Decode accepts the literals NaN, Infinity and -Infinity (as json.Number).
//
// # Encoding
//
// [Marshal], [AppendValue] and [String] write what json.dumps(v) writes with its defaults:
// separators ", " and ": ", ensure_ascii=True, allow_nan=True, no sorting and no indent. A
// json.Number whose literal has no '.', 'e' or 'E' is a Python int; any other is a Python
// float and is written as float.__repr__ writes it. Go numbers, strings, slices and maps are
// accepted too; see [AppendValue] for the full list. Go maps have no order, so a map is written
// with its keys sorted; build an [Object] to get Python's insertion order.
//
// # Known differences from Python
//
// Go strings hold UTF-8, which cannot carry a lone UTF-16 surrogate. Python keeps a lone
// surrogate escape such as "\ud800" in its str and json.dumps writes it back unchanged; Decode
// turns it into U+FFFD, so the output has "\ufffd" where Python's has "\ud800". A surrogate
// pair ("\ud83d\ude00") is joined into one code point, as in Python, and round-trips exactly.
//
// Input that is not valid UTF-8 is rejected with [ErrSyntax] (json.loads given such bytes
// raises UnicodeDecodeError). A Go string that is not valid UTF-8 can still be given to
// Marshal: each byte that is not part of a valid UTF-8 sequence is written as "\ufffd".
//
// Python gives up on nesting deeper than its recursion limit (about 1,000 levels) with
// RecursionError, and on a cyclic structure with ValueError; pyjson allows [MaxDepth] levels
// and fails beyond them with [ErrTooDeep], which is also how a cyclic Go value fails.
//
// Python 3.11 and later refuse to convert an int of more than 4,300 digits to or from text
// (sys.get_int_max_str_digits); pyjson has no such limit.
//
// The byte 0x7f (DEL) is written as "\u007f": py_encode_basestring_ascii escapes every
// character outside ' '..'~', and so does the C encoder json.dumps uses.
package pyjson
