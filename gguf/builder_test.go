package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
)

// builder writes GGUF bytes for synthetic test files, field by field, so that a test can
// produce exactly the malformation it wants.
type builder struct{ b []byte }

func (w *builder) raw(p ...byte) *builder   { w.b = append(w.b, p...); return w }
func (w *builder) u8(v uint8) *builder      { return w.raw(v) }
func (w *builder) u16(v uint16) *builder    { w.b = binary.LittleEndian.AppendUint16(w.b, v); return w }
func (w *builder) u32(v uint32) *builder    { w.b = binary.LittleEndian.AppendUint32(w.b, v); return w }
func (w *builder) i32(v int32) *builder     { return w.u32(uint32(v)) }
func (w *builder) u64(v uint64) *builder    { w.b = binary.LittleEndian.AppendUint64(w.b, v); return w }
func (w *builder) i64(v int64) *builder     { return w.u64(uint64(v)) }
func (w *builder) f32(v float32) *builder   { return w.u32(math.Float32bits(v)) }
func (w *builder) f64(v float64) *builder   { return w.u64(math.Float64bits(v)) }
func (w *builder) str(s string) *builder    { return w.u64(uint64(len(s))).raw([]byte(s)...) }
func (w *builder) zeros(n int) *builder     { return w.raw(make([]byte, n)...) }
func (w *builder) bytes() []byte            { return bytes.Clone(w.b) }
func (w *builder) pos() int64               { return int64(len(w.b)) }
func (w *builder) typ(t ValueType) *builder { return w.i32(int32(t)) }

// header starts a file: magic, version and the two counts.
func header(version uint32, nTensors, nKV uint64) *builder {
	w := &builder{}
	return w.raw([]byte(Magic)...).u32(version).u64(nTensors).u64(nKV)
}

func (w *builder) kvU32(key string, v uint32) *builder { return w.str(key).typ(TypeUint32).u32(v) }
func (w *builder) kvStr(key, v string) *builder        { return w.str(key).typ(TypeString).str(v) }

func (w *builder) kvStrs(key string, vs ...string) *builder {
	w.str(key).typ(TypeArray).typ(TypeString).u64(uint64(len(vs)))
	for _, v := range vs {
		w.str(v)
	}
	return w
}

// tensor writes a tensor info.
func (w *builder) tensor(name string, t GGMLType, offset uint64, dims ...int64) *builder {
	w.str(name).u32(uint32(len(dims)))
	for _, d := range dims {
		w.i64(d)
	}
	return w.i32(int32(t)).u64(offset)
}

// pad appends zeros up to a multiple of align.
func (w *builder) pad(align int) *builder {
	for len(w.b)%align != 0 {
		w.b = append(w.b, 0)
	}
	return w
}

// validFile is a small well-formed file: three KVs and two tensors (an f32 [4,2] of 32 bytes
// and a q4_0 [32] of 18 bytes, padded to 32), with the last tensor's padding present.
func validFile() []byte {
	w := header(3, 2, 3).
		kvStr("general.architecture", "llama").
		kvU32("llama.context_length", 128).
		kvStrs("tokenizer.ggml.tokens", "<unk>", "a", "b")
	w.tensor("token_embd.weight", GGMLTypeF32, 0, 4, 2)
	w.tensor("output.weight", GGMLTypeQ4_0, 32, 32)
	w.pad(DefaultAlignment).zeros(32).zeros(18).pad(DefaultAlignment)
	return w.bytes()
}
