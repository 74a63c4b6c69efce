package gguf_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gojev/gojev/gguf"
)

// tinyGGUF returns a small vocab-only GGUF file: an architecture, a chat template and a
// three-token vocabulary, no tensors.
func tinyGGUF() []byte {
	var b bytes.Buffer
	le := binary.LittleEndian
	str := func(s string) {
		binary.Write(&b, le, uint64(len(s)))
		b.WriteString(s)
	}
	b.WriteString("GGUF")
	binary.Write(&b, le, uint32(3)) // version
	binary.Write(&b, le, int64(0))  // tensors
	binary.Write(&b, le, int64(3))  // key-value pairs
	str("general.architecture")
	binary.Write(&b, le, int32(gguf.TypeString))
	str("llama")
	str("tokenizer.chat_template")
	binary.Write(&b, le, int32(gguf.TypeString))
	str("{% for m in messages %}{{ m.content }}{% endfor %}")
	str("tokenizer.ggml.tokens")
	binary.Write(&b, le, int32(gguf.TypeArray))
	binary.Write(&b, le, int32(gguf.TypeString))
	binary.Write(&b, le, uint64(3))
	for _, tok := range []string{"<s>", "</s>", "hi"} {
		str(tok)
	}
	return b.Bytes()
}

func Example() {
	data := tinyGGUF()
	f, err := gguf.Read(bytes.NewReader(data), int64(len(data)), gguf.WithName("tiny.gguf"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("version:", f.Version)
	fmt.Println("architecture:", f.Architecture())
	fmt.Println("tensors:", f.TensorCount())
	tmpl, _ := f.ChatTemplate()
	fmt.Println("template:", tmpl)
	toks, _ := f.Strings("tokenizer.ggml.tokens")
	fmt.Println("tokens:", toks)
	fmt.Println("keys:", f.Keys())

	// The same file cut short: the error says where and matches ErrTruncated.
	cut := data[:len(data)-1]
	_, err = gguf.Read(bytes.NewReader(cut), int64(len(cut)), gguf.WithName("cut.gguf"))
	var fe *gguf.FormatError
	if errors.As(err, &fe) {
		fmt.Println("truncated:", errors.Is(err, gguf.ErrTruncated), "at offset", fe.Offset)
	}
	fmt.Println(err)

	// Output:
	// version: 3
	// architecture: llama
	// tensors: 0
	// template: {% for m in messages %}{{ m.content }}{% endfor %}
	// tokens: [<s> </s> hi]
	// keys: [general.architecture tokenizer.chat_template tokenizer.ggml.tokens]
	// truncated: true at offset 230
	// gguf: cut.gguf: offset 230 (0xe6): key-value pair 2 "tokenizer.ggml.tokens": array element 2: string length 2 exceeds the 1 bytes remaining: truncated GGUF file
}

func ExampleOpen() {
	path := filepath.Join(os.TempDir(), "gguf-example-tiny.gguf") // a model file, here the tiny one above
	if err := os.WriteFile(path, tinyGGUF(), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	defer os.Remove(path)
	f, err := gguf.Open(path)
	if err != nil {
		// errors.Is(err, gguf.ErrTruncated), gguf.ErrCorrupt, ... or fs.ErrNotExist
		fmt.Println(err)
		return
	}
	fmt.Println(f.Architecture(), f.TensorCount(), f.Size)
	for _, t := range f.Tensors {
		fmt.Println(t.Name, t.Type, t.Dims, t.FileOffset, t.Size)
	}
	_, err = gguf.Open(filepath.Join(os.TempDir(), "no-such-model.gguf"))
	fmt.Println(errors.Is(err, fs.ErrNotExist))
	// Output:
	// llama 0 240
	// true
}
