package pyjson_test

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/internal/testenv"
	"github.com/gojev/gojev/pyjson"
)

// pythonDumpsLoads reads the file named by argv[1], one JSON document a line, and prints for
// each "OK " and json.dumps(json.loads(line)), or "ERR " and the exception's name. Lines are
// split on b"\n" only (text mode would also split on a bare "\r").
const pythonDumpsLoads = `
import json, sys
with open(sys.argv[1], "rb") as f:
    for line in f:
        if line.endswith(b"\n"):
            line = line[:-1]
        try:
            out = "OK " + json.dumps(json.loads(line.decode("utf-8")))
        except Exception as e:
            out = "ERR " + type(e).__name__
        sys.stdout.write(out + "\n")
`

// corpusSize is how many random documents TestAgainstPython generates.
const corpusSize = 3000

// TestAgainstPython compares String(Decode(doc)) byte for byte with Python's
// json.dumps(json.loads(doc)) over a fuzzed corpus, and checks that both reject the same
// invalid documents.
func TestAgainstPython(t *testing.T) {
	python := testenv.Python3(t)

	g := &docGen{r: rand.New(rand.NewPCG(20240611, 1))}
	var valid []string
	valid = append(valid, edgeDocs()...)
	for range corpusSize {
		valid = append(valid, g.doc())
	}
	invalid := []string{
		"", "01", "1.", "1e", "1e+", ".5", "+1", "-", "-NaN", "nan", "tru", "1 2", "truex",
		"[1,]", `{"a":1,}`, "[1 2]", `{"a" 1}`, "{1:2}", "{'a':1}", "[", `{"a":1`, `"abc`,
		`"\x"`, `"\u12"`, `"\u12g4"`, "\"a\tb\"", "\"\r\"", "\"a\xffb\"", "\"\xed\xa0\x80\"",
		"\ufeff1", "\u00a01", "// x", "[1]]", "Infinity1", "0x10", "1_000", `"\U0001F600"`,
	}

	path := filepath.Join(t.TempDir(), "corpus.jsonl")
	var in bytes.Buffer
	for _, doc := range append(valid, invalid...) {
		require.NotContains(t, doc, "\n", "a document must fit on one line")
		in.WriteString(doc)
		in.WriteByte('\n')
	}
	require.NoError(t, os.WriteFile(path, in.Bytes(), 0o600))

	cmd := exec.Command(python, "-I", "-c", pythonDumpsLoads, path)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(t, err, "python3 failed")
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	require.Len(t, lines, len(valid)+len(invalid), "python3 printed one line per document")

	mismatches := 0
	for i, doc := range valid {
		want, ok := strings.CutPrefix(lines[i], "OK ")
		require.True(t, ok, "python3 rejected generated document %d (%s): %q", i, lines[i], doc)
		got, err := decodeAndString(doc)
		if err != nil || got != want {
			mismatches++
			if mismatches <= 20 {
				t.Errorf("document %d differs\ninput:  %q\npython: %s\ngo:     %s (error %v)", i, doc, want, got, err)
			}
		}
	}
	for i, doc := range invalid {
		assert.True(t, strings.HasPrefix(lines[len(valid)+i], "ERR "), "python3 accepts %q", doc)
		_, err := pyjson.Decode([]byte(doc))
		assert.ErrorIs(t, err, pyjson.ErrSyntax, "Decode(%q)", doc)
	}
	t.Logf("compared %d documents with python3: %d mismatches; %d invalid documents rejected",
		len(valid), mismatches, len(invalid))
}

func decodeAndString(doc string) (string, error) {
	v, err := pyjson.Decode([]byte(doc))
	if err != nil {
		return "", err
	}
	return pyjson.String(v)
}

// edgeDocs returns hand-picked documents: numbers at the edges, empty containers, duplicate
// keys and deep nesting.
func edgeDocs() []string {
	docs := []string{
		"[]", "{}", "[{}]", `{"a":{}}`, "[[],[[]],{}]", `""`, "null", "true", "false",
		`{"a":1,"b":2,"a":3}`, `{"a":1,"a":2,"a":3}`, `{"\u00e9":1,"é":2,"e":3}`,
		`"\ud83d\ude00\uD83D\uDE00😀"`, `"\u007f\u0000\u001f\t\"\\\/"`,
		" \t\r[ 1 , 2 ]\r\t ",
	}
	for _, n := range []string{
		"1e-05", "1e16", "1e15", "1.0", "-0.0", "0.1", "1e308", "5e-324", "2.5e-7", "1e22",
		"1E5", "1e+5", "1E+5", "1e-5", "1E-05", "-0", "0", "0.0", "0e0", "0E-0", "-0e+0",
		"1e400", "-1e400", "1e-400", "-1e-400", "1e99999999999999999999",
		"1.7976931348623157e308", "1.7976931348623158e308", "1.7976931348623159e308",
		"2.2250738585072014e-308", "2.2250738585072011e-308", "4.9e-324", "2.4703282292062328e-324",
		"2.4703282292062327e-324", "9007199254740993", "9007199254740993.0", "0.30000000000000004",
		"123456789012345678901234567890", "-123456789012345678901234567890",
		"1e-4", "0.0001", "0.00009999999999999999", "9999999999999998.0", "9999999999999999.0",
		"12345678901234567890.0", "1.5e-07", "100", "100.0", "1e0",
		"0.1000000000000000055511151231257827021181583404541015625",
		"1" + strings.Repeat("0", 400), "-" + strings.Repeat("9", 4000), "1" + strings.Repeat("0", 400) + ".0",
		"0." + strings.Repeat("0", 400) + "1", "4.35679e-10", "1.0e16", "9.999999999999999e15",
		"1.0e-4", "9.9999e-5",
	} {
		docs = append(docs, n, "["+n+"]")
		if !strings.HasPrefix(n, "-") {
			docs = append(docs, "-"+n)
		}
	}
	docs = append(docs, "NaN", "Infinity", "-Infinity", "[NaN,Infinity,-Infinity]")
	// Exactly halfway between 0 and the smallest subnormal (ties to even: 0.0), then a hair
	// above it after a thousand more zeros (5e-324): literals of over a thousand digits.
	half := new(big.Int).Exp(big.NewInt(5), big.NewInt(1075), nil).String() // 2**-1075 * 10**1075
	half = "0." + strings.Repeat("0", 1075-len(half)) + half
	docs = append(docs, half, half+strings.Repeat("0", 1000)+"1",
		"1.00000000000000011102230246251565404236316680908203125", // 1 + 2**-53: ties to even
		"1.00000000000000011102230246251565404236316680908203125"+strings.Repeat("0", 900)+"1")
	// Depth 200, alternating arrays and objects, as one line.
	docs = append(docs, strings.Repeat(`[{"k":`, 100)+`"deep"`+strings.Repeat("}]", 100))
	// Powers of ten around the switch between fixed and scientific notation, and beyond.
	for e := -330; e <= 330; e++ {
		docs = append(docs, fmt.Sprintf("[1e%d, 9.5E%+d, 1.0e%d]", e, e, e))
	}
	return docs
}

// docGen writes random JSON documents as text, so that the spelling of numbers, escapes and
// whitespace varies as well as the values.
type docGen struct {
	r *rand.Rand
	b strings.Builder
}

// maxGenDepth is how deep docGen nests arrays and objects.
const maxGenDepth = 8

func (g *docGen) doc() string {
	g.b.Reset()
	g.space()
	g.value(0)
	g.space()
	return g.b.String()
}

// space writes JSON whitespace, other than the newline that separates documents.
func (g *docGen) space() {
	for g.r.IntN(4) == 0 {
		g.b.WriteByte(" \t\r"[g.r.IntN(3)])
	}
}

func (g *docGen) value(depth int) {
	switch k := g.r.IntN(10); {
	case k < 2 && depth < maxGenDepth:
		g.array(depth + 1)
	case k < 4 && depth < maxGenDepth:
		g.object(depth + 1)
	case k < 6:
		g.string()
	case k < 9:
		g.number()
	default:
		g.b.WriteString([]string{"null", "true", "false"}[g.r.IntN(3)])
	}
}

func (g *docGen) array(depth int) {
	g.b.WriteByte('[')
	g.space()
	for i := range g.r.IntN(6) {
		if i > 0 {
			g.b.WriteByte(',')
			g.space()
		}
		g.value(depth)
		g.space()
	}
	g.b.WriteByte(']')
}

// duplicateKeys are drawn often enough for objects to repeat keys, spelled both raw and
// escaped.
var duplicateKeys = []string{`"a"`, `"b"`, `"id"`, `"é"`, `"\u00e9"`, `"😀"`, `"\ud83d\ude00"`, `""`}

func (g *docGen) object(depth int) {
	g.b.WriteByte('{')
	g.space()
	for i := range g.r.IntN(7) {
		if i > 0 {
			g.b.WriteByte(',')
			g.space()
		}
		if g.r.IntN(2) == 0 {
			g.b.WriteString(duplicateKeys[g.r.IntN(len(duplicateKeys))])
		} else {
			g.string()
		}
		g.space()
		g.b.WriteByte(':')
		g.space()
		g.value(depth)
		g.space()
	}
	g.b.WriteByte('}')
}

// string writes a string literal mixing plain ASCII, every kind of escape and characters
// from all planes, raw or escaped. It never writes a lone surrogate (see the package doc).
func (g *docGen) string() {
	g.b.WriteByte('"')
	for range g.r.IntN(12) {
		switch g.r.IntN(12) {
		case 0, 1:
			for range 1 + g.r.IntN(8) {
				c := byte(' ' + g.r.IntN('~'-' '+1))
				if c == '"' || c == '\\' {
					g.b.WriteByte('\\')
				}
				g.b.WriteByte(c)
			}
		case 2:
			g.b.WriteString([]string{`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`}[g.r.IntN(8)])
		case 3:
			g.escape(rune(g.r.IntN(0x20))) // control character
		case 4:
			if g.r.IntN(2) == 0 {
				g.b.WriteByte(0x7f)
			} else {
				g.escape(0x7f)
			}
		default:
			g.char(g.rune())
		}
	}
	g.b.WriteByte('"')
}

// rune returns a random code point that is not a surrogate or below U+0080, from a range
// picked at random.
func (g *docGen) rune() rune {
	ranges := [][2]rune{
		{0x80, 0xff},       // Latin-1
		{0x370, 0x4ff},     // Greek, Cyrillic
		{0x4e00, 0x9fff},   // CJK
		{0xac00, 0xd7a3},   // Hangul
		{0xd7a4, 0xd7ff},   // just below the surrogates
		{0xe000, 0xf8ff},   // private use, just above the surrogates
		{0xfff0, 0xffff},   // specials, noncharacters
		{0x2028, 0x2029},   // line and paragraph separators
		{0xfeff, 0xfeff},   // byte order mark
		{0x80, 0xd7ff},     // anywhere in the BMP below the surrogates
		{0x10000, 0x1ffff}, // plane 1, with emoji
		{0x1f300, 0x1faff}, // emoji
		{0x20000, 0x2a6df}, // CJK extension B
		{0x10000, 0x10ffff},
		{0xf0000, 0x10ffff}, // private use planes
	}
	rg := ranges[g.r.IntN(len(ranges))]
	return rg[0] + rune(g.r.IntN(int(rg[1]-rg[0]+1)))
}

// char writes r raw (UTF-8) or as a \u escape, a surrogate pair beyond U+FFFF.
func (g *docGen) char(r rune) {
	if g.r.IntN(2) == 0 {
		g.b.WriteRune(r)
		return
	}
	if r > 0xffff {
		r -= 0x10000
		g.escape(0xd800 | r>>10)
		g.escape(0xdc00 | r&0x3ff)
		return
	}
	g.escape(r)
}

// escape writes \uXXXX for r with hex digits of random case.
func (g *docGen) escape(r rune) {
	hex := fmt.Sprintf("%04x", r)
	if g.r.IntN(2) == 0 {
		hex = strings.ToUpper(hex)
	}
	g.b.WriteString(`\u` + hex)
}

func (g *docGen) number() {
	var s string
	switch g.r.IntN(8) {
	case 0:
		s = strconv.Itoa(g.r.IntN(2001) - 1000)
	case 1:
		s = strconv.FormatInt(int64(g.r.Uint64()), 10)
	case 2: // big integer
		s = g.digits(20 + g.r.IntN(60))
		if g.r.IntN(2) == 0 {
			s = "-" + s
		}
	case 3, 4: // any float64, shortest form, spelled in various ways
		f := math.Float64frombits(g.r.Uint64())
		for math.IsNaN(f) || math.IsInf(f, 0) {
			f = math.Float64frombits(g.r.Uint64())
		}
		if g.r.IntN(2) == 0 {
			f = math.Ldexp(g.r.Float64(), g.r.IntN(130)-65) // nearer 1, where fixed notation is used
		}
		s = g.spell(f)
	case 5: // random decimal: mantissa digits and an exponent near the notation switch
		s = g.digits(1+g.r.IntN(25)) + "." + g.digits(1+g.r.IntN(5))
		s += fmt.Sprintf("e%d", g.r.IntN(60)-30)
	case 6: // fixed notation with many digits around the point
		s = g.digits(1+g.r.IntN(20)) + "." + strings.Repeat("0", g.r.IntN(6)) + g.digits(1+g.r.IntN(20))
	default: // a power of ten around the switch between fixed and scientific notation
		s = fmt.Sprintf("1e%d", g.r.IntN(40)-20)
	}
	if g.r.IntN(4) == 0 && !strings.HasPrefix(s, "-") {
		s = "-" + s
	}
	g.b.WriteString(s)
}

// spell writes f in one of several literal forms that all read back as f or near it.
func (g *docGen) spell(f float64) string {
	var s string
	switch g.r.IntN(4) {
	case 0:
		s = strconv.FormatFloat(f, 'e', -1, 64)
	case 1:
		s = strconv.FormatFloat(f, 'e', g.r.IntN(25), 64) // not the shortest: rounding varies
	case 2:
		s = strconv.FormatFloat(f, 'g', 17, 64)
	default:
		s = strconv.FormatFloat(f, 'f', -1, 64)
	}
	if !strings.ContainsAny(s, ".eE") {
		s += ".0" // keep it a Python float
	}
	switch g.r.IntN(3) {
	case 0:
		s = strings.Replace(s, "e", "E", 1)
	case 1:
		s = strings.Replace(s, "e+", "e", 1)
	}
	return s
}

// digits returns n random decimal digits, the first not 0.
func (g *docGen) digits(n int) string {
	b := make([]byte, n)
	b[0] = byte('1' + g.r.IntN(9))
	for i := 1; i < n; i++ {
		b[i] = byte('0' + g.r.IntN(10))
	}
	return string(b)
}

// TestCorpusIsValid checks the generator without python3: every document is valid UTF-8 and
// decodes.
func TestCorpusIsValid(t *testing.T) {
	g := &docGen{r: rand.New(rand.NewPCG(1, 2))}
	docs := edgeDocs()
	for range 500 {
		docs = append(docs, g.doc())
	}
	for _, doc := range docs {
		require.True(t, utf8.ValidString(doc), "%q", doc)
		_, err := decodeAndString(doc)
		require.NoError(t, err, "%q", doc)
	}
}
