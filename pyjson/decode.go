package pyjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth is how many arrays and objects may enclose one another, in the input of [Decode]
// and in the value given to [Marshal]. Python's own limit is its recursion limit, about 1,000.
const MaxDepth = 10000

var (
	// ErrSyntax is wrapped by every error Decode returns for input that is not one JSON value
	// as json.loads accepts it; the error is a *[SyntaxError] carrying the byte offset.
	ErrSyntax = errors.New("invalid JSON")
	// ErrTooDeep is wrapped by the error Decode and Marshal return when arrays and objects
	// nest more than [MaxDepth] levels (a cyclic Go value fails this way too).
	ErrTooDeep = errors.New("JSON nested too deeply")
)

// SyntaxError describes input Decode rejects. errors.Is(err, ErrSyntax) reports true for it.
type SyntaxError struct {
	Offset int    // byte offset in the input where the problem was found
	Msg    string // what is wrong there
}

// Error returns "pyjson: invalid JSON at byte offset N: Msg".
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("pyjson: %v at byte offset %d: %s", ErrSyntax, e.Offset, e.Msg)
}

// Unwrap returns ErrSyntax.
func (e *SyntaxError) Unwrap() error { return ErrSyntax }

// Decode parses data, which must hold exactly one JSON value with optional whitespace around
// it, as Python's json.loads does, and returns it as one of:
//
//   - nil for null, bool for true and false, string for strings;
//   - json.Number for numbers, holding the literal exactly as written ("1E5", "-0", "1.50"),
//     and for the non-standard literals NaN, Infinity and -Infinity that json.loads accepts;
//   - []any for arrays and Object for objects, empty but non-nil when the input is empty.
//
// Object members keep the input order. A key that appears again keeps the position of its
// first appearance and takes the value of its last, which is what json.loads produces, since
// it stores the members in a dict.
//
// Decode rejects, with a *SyntaxError wrapping ErrSyntax, anything json.loads rejects: trailing
// data after the value, trailing commas, single quotes, raw control characters inside strings,
// bad escapes, leading zeros, a leading byte order mark. It also rejects input that is not
// valid UTF-8. Nesting deeper than MaxDepth fails with an error wrapping ErrTooDeep. A lone
// UTF-16 surrogate escape ("\udc00") decodes to U+FFFD; see the package documentation.
func Decode(data []byte) (any, error) {
	// Working on a string lets keys, numbers and strings without escapes share its memory.
	d := decoder{data: string(data)}
	if strings.HasPrefix(d.data, "\ufeff") {
		return nil, d.errorf(0, "unexpected UTF-8 byte order mark")
	}
	v, err := d.value()
	if err != nil {
		return nil, err
	}
	d.skipSpace()
	if d.pos < len(d.data) {
		return nil, d.errorf(d.pos, "extra data after the value")
	}
	return v, nil
}

// DecodeReader reads r to its end and decodes what it read with [Decode]. An error from r is
// returned wrapped.
func DecodeReader(r io.Reader) (any, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("pyjson: reading input: %w", err)
	}
	return Decode(data)
}

// decoder is a recursive-descent parser over the whole input.
type decoder struct {
	data  string
	pos   int // next byte to read
	depth int // arrays and objects open around pos
}

func (d *decoder) errorf(offset int, format string, args ...any) error {
	return &SyntaxError{Offset: offset, Msg: fmt.Sprintf(format, args...)}
}

// skipSpace skips the whitespace JSON (and json.loads) allows: space, tab, LF and CR.
func (d *decoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// value parses the value that starts after optional whitespace at d.pos.
func (d *decoder) value() (any, error) {
	d.skipSpace()
	if d.pos >= len(d.data) {
		return nil, d.errorf(d.pos, "unexpected end of input, expecting a value")
	}
	rest := d.data[d.pos:]
	switch c := rest[0]; {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		return d.string()
	case c == '-' || ('0' <= c && c <= '9'):
		if strings.HasPrefix(rest, "-Infinity") {
			d.pos += len("-Infinity")
			return json.Number("-Infinity"), nil
		}
		n := scanNumber(rest)
		if n == 0 {
			return nil, d.errorf(d.pos, "invalid number")
		}
		d.pos += n
		return json.Number(rest[:n]), nil
	}
	for _, lit := range [...]struct {
		text  string
		value any
	}{
		{"null", nil},
		{"true", true},
		{"false", false},
		{"NaN", json.Number("NaN")},
		{"Infinity", json.Number("Infinity")},
	} {
		if strings.HasPrefix(rest, lit.text) {
			d.pos += len(lit.text)
			return lit.value, nil
		}
	}
	return nil, d.errorf(d.pos, "unexpected character %q, expecting a value", firstRune(rest))
}

// firstRune returns the character that starts s, for error messages.
func firstRune(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}

// scanNumber returns the length of the JSON number literal that starts s
// (-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?, as json.loads's NUMBER_RE), or 0 if s does
// not start with one. A '.' or exponent marker not followed by digits makes the literal
// invalid: json.loads rejects "1." and "1e" too (as extra data after "1").
func scanNumber(s string) int {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		i = skipDigits(s, i)
	default:
		return 0
	}
	if i < len(s) && s[i] == '.' {
		j := skipDigits(s, i+1)
		if j == i+1 {
			return 0
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := skipDigits(s, i)
		if j == i {
			return 0
		}
		i = j
	}
	return i
}

// skipDigits returns the index of the first byte at or after i in s that is not 0-9.
func skipDigits(s string, i int) int {
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i
}

// enter records that an array or object opens at d.pos, failing beyond MaxDepth.
func (d *decoder) enter() error {
	if d.depth >= MaxDepth {
		return fmt.Errorf("pyjson: %w: more than %d nested arrays and objects at byte offset %d",
			ErrTooDeep, MaxDepth, d.pos)
	}
	d.depth++
	d.pos++ // the '[' or '{'
	return nil
}

// array parses the array that starts at d.pos.
func (d *decoder) array() (any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer func() { d.depth-- }()
	items := []any{}
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return items, nil
	}
	for {
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		items = append(items, v)
		done, err := d.separator(']')
		if err != nil {
			return nil, err
		}
		if done {
			return items, nil
		}
	}
}

// object parses the object that starts at d.pos.
func (d *decoder) object() (any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer func() { d.depth-- }()
	members := Object{}
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return members, nil
	}
	index := map[string]int{} // key → its position in members
	for {
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, d.errorf(d.pos, "expecting a string key in double quotes")
		}
		key, err := d.string()
		if err != nil {
			return nil, err
		}
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, d.errorf(d.pos, "expecting ':' after an object key")
		}
		d.pos++
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		// Dict semantics: a repeated key replaces the value and keeps the first position.
		if i, ok := index[key]; ok {
			members[i].Value = v
		} else {
			index[key] = len(members)
			members = append(members, Member{Key: key, Value: v})
		}
		done, err := d.separator('}')
		if err != nil {
			return nil, err
		}
		if done {
			return members, nil
		}
	}
}

// separator reads what follows an array item or object member: ',' (done is false) or the
// closing byte (done is true).
func (d *decoder) separator(closing byte) (done bool, err error) {
	d.skipSpace()
	if d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ',':
			d.pos++
			return false, nil
		case closing:
			d.pos++
			return true, nil
		}
	}
	return false, d.errorf(d.pos, "expecting ',' or '%c'", closing)
}

// string parses the string that starts (with its '"') at d.pos.
func (d *decoder) string() (string, error) {
	open := d.pos
	var buf []byte // nil until the first escape; until then the result is a slice of the input
	start := open + 1
	i := start // start..i is scanned but not yet copied to buf
	for i < len(d.data) {
		c := d.data[i]
		switch {
		case c == '"':
			d.pos = i + 1
			if buf == nil {
				return d.data[start:i], nil
			}
			return string(append(buf, d.data[start:i]...)), nil
		case c == '\\':
			buf = append(buf, d.data[start:i]...)
			var err error
			if buf, i, err = d.escape(buf, i); err != nil {
				return "", err
			}
			start = i
		case c < 0x20:
			// json.loads's default strict=True rejects raw control characters in strings.
			return "", d.errorf(i, "control character %q in string", c)
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRuneInString(d.data[i:])
			if r == utf8.RuneError && size == 1 {
				return "", d.errorf(i, "invalid UTF-8 byte %#x", c)
			}
			i += size
		}
	}
	return "", d.errorf(open, "unterminated string")
}

// escape appends to buf the character of the escape sequence at d.data[i] (a '\') and returns
// the index after the sequence. Like json.loads, it joins a \u escape of a high surrogate with
// a directly following \u escape of a low surrogate; a surrogate left alone becomes U+FFFD.
func (d *decoder) escape(buf []byte, i int) ([]byte, int, error) {
	if i+1 >= len(d.data) {
		return buf, i, d.errorf(i, "unterminated string")
	}
	if c, ok := simpleEscapes[d.data[i+1]]; ok {
		return append(buf, c), i + 2, nil
	}
	if d.data[i+1] != 'u' {
		return buf, i, d.errorf(i, "invalid escape %q", d.data[i:i+2])
	}
	r, ok := hex4(d.data[i+2:])
	if !ok {
		return buf, i, d.errorf(i, "invalid \\uXXXX escape")
	}
	i += 6
	if utf16.IsSurrogate(r) && r < 0xdc00 && strings.HasPrefix(d.data[i:], `\u`) {
		if r2, ok := hex4(d.data[i+2:]); ok && 0xdc00 <= r2 && r2 <= 0xdfff {
			r = utf16.DecodeRune(r, r2)
			i += 6
		}
	}
	// utf8.AppendRune writes U+FFFD for a surrogate left alone.
	return utf8.AppendRune(buf, r), i, nil
}

// simpleEscapes maps the byte after '\' to the character it stands for, for all escapes but \u.
var simpleEscapes = map[byte]byte{
	'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t',
}

// hex4 decodes the four hex digits (either case) that start s.
func hex4(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[:4]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
