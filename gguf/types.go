package gguf

import "fmt"

// Limits and constants of the format, as gguf.h, gguf.cpp and ggml.h define them.
const (
	// Magic is the file's first four bytes (GGUF_MAGIC).
	Magic = "GGUF"
	// MaxVersion is the newest version gguf.cpp reads (GGUF_VERSION). Versions 2 and 3 are
	// accepted; version 1 is refused.
	MaxVersion = 3
	// DefaultAlignment is the data alignment in bytes when general.alignment is absent
	// (GGUF_DEFAULT_ALIGNMENT).
	DefaultAlignment = 32
	// AlignmentKey is the key that overrides the alignment (GGUF_KEY_GENERAL_ALIGNMENT); its
	// value must be a u32 power of two.
	AlignmentKey = "general.alignment"
	// TokensKey is the vocabulary's key: an array of strings, one per token id.
	TokensKey = "tokenizer.ggml.tokens"
	// MaxStringLength is the longest string, in bytes, gguf.cpp reads
	// (GGUF_MAX_STRING_LENGTH, 1 GiB).
	MaxStringLength = 1 << 30
	// MaxArrayElements is the largest array element count gguf.cpp reads
	// (GGUF_MAX_ARRAY_ELEMENTS).
	MaxArrayElements = 1 << 30
	// MaxDims is the largest number of tensor dimensions (GGML_MAX_DIMS).
	MaxDims = 4
	// MaxNameLength is GGML_MAX_NAME: a tensor name must be shorter than this many bytes.
	MaxNameLength = 64
	// MaxLayers is llama.cpp's LLAMA_MAX_LAYERS: "<arch>.block_count" must be in [1, 512].
	MaxLayers = 512

	// maxTensors and maxKV are gguf_init_from_reader's bounds on the header counts:
	// SIZE_MAX/sizeof(gguf_tensor_info) and SIZE_MAX/sizeof(gguf_kv) on a 64-bit build
	// (sizeof(struct ggml_tensor) is 336, so gguf_tensor_info is 344; gguf_kv is 88 with
	// libstdc++).
	maxTensors = ^uint64(0) / 344
	maxKV      = ^uint64(0) / 88

	// minKVBytes and minTensorInfoBytes are the fewest bytes one key-value pair and one tensor
	// info can take: a KV is a key length (8), a non-empty key (1), a type (4) and at least one
	// value byte (a u8, i8 or bool; an empty array takes 12); a tensor info is a name length
	// (8, the name may be empty), n_dims (4, may be 0), a type (4) and an offset (8).
	minKVBytes         = 8 + 1 + 4 + 1
	minTensorInfoBytes = 8 + 4 + 4 + 8
)

// ValueType is the type of a metadata value (enum gguf_type, stored as int32). For an array,
// KV.Type is the element type and KV.Array is true; TypeArray itself never appears in a KV.
type ValueType int32

// The metadata value types (GGUF_TYPE_*).
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
	typeCount   ValueType = 13
)

var valueTypeNames = [typeCount]string{"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str", "arr", "u64", "i64", "f64"}

// String returns gguf.cpp's name for the type (GGUF_TYPE_NAME: "u8", "str", "arr", ...), or
// "gguf_type(N)" for a value outside the enum.
func (t ValueType) String() string {
	if t >= 0 && t < typeCount {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("gguf_type(%d)", int32(t))
}

// Size returns the encoded size in bytes of one value of the type (GGUF_TYPE_SIZE), or 0 for
// TypeString, TypeArray and invalid types, whose size is not fixed.
func (t ValueType) Size() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// GGMLType is a tensor's element type (enum ggml_type in ggml.h, stored as int32).
type GGMLType int32

// The tensor types ggml defines (GGML_TYPE_*). Values 4, 5, 31-33 and 36-38 were removed from
// ggml; a tensor of one of them is refused, as gguf.cpp refuses it (its block size is 0).
const (
	GGMLTypeF32     GGMLType = 0
	GGMLTypeF16     GGMLType = 1
	GGMLTypeQ4_0    GGMLType = 2
	GGMLTypeQ4_1    GGMLType = 3
	GGMLTypeQ5_0    GGMLType = 6
	GGMLTypeQ5_1    GGMLType = 7
	GGMLTypeQ8_0    GGMLType = 8
	GGMLTypeQ8_1    GGMLType = 9
	GGMLTypeQ2_K    GGMLType = 10
	GGMLTypeQ3_K    GGMLType = 11
	GGMLTypeQ4_K    GGMLType = 12
	GGMLTypeQ5_K    GGMLType = 13
	GGMLTypeQ6_K    GGMLType = 14
	GGMLTypeQ8_K    GGMLType = 15
	GGMLTypeIQ2_XXS GGMLType = 16
	GGMLTypeIQ2_XS  GGMLType = 17
	GGMLTypeIQ3_XXS GGMLType = 18
	GGMLTypeIQ1_S   GGMLType = 19
	GGMLTypeIQ4_NL  GGMLType = 20
	GGMLTypeIQ3_S   GGMLType = 21
	GGMLTypeIQ2_S   GGMLType = 22
	GGMLTypeIQ4_XS  GGMLType = 23
	GGMLTypeI8      GGMLType = 24
	GGMLTypeI16     GGMLType = 25
	GGMLTypeI32     GGMLType = 26
	GGMLTypeI64     GGMLType = 27
	GGMLTypeF64     GGMLType = 28
	GGMLTypeIQ1_M   GGMLType = 29
	GGMLTypeBF16    GGMLType = 30
	GGMLTypeTQ1_0   GGMLType = 34
	GGMLTypeTQ2_0   GGMLType = 35
	GGMLTypeMXFP4   GGMLType = 39
	GGMLTypeNVFP4   GGMLType = 40
	GGMLTypeQ1_0    GGMLType = 41
	GGMLTypeQ2_0    GGMLType = 42
	// GGMLTypeCount is GGML_TYPE_COUNT: every valid type is below it.
	GGMLTypeCount GGMLType = 43
)

// typeTraits is ggml.c's type_traits table reduced to what the file layout needs: the block
// size (elements per block) and the type size (bytes per block). The block sizes and
// sizeof(block_*) values were taken from ggml/src/ggml.c and ggml/src/ggml-common.h at the
// pinned llama.cpp; removed types have a zero block size, as in ggml.c.
var typeTraits = [GGMLTypeCount]struct {
	name      string
	blockSize int64
	typeSize  int64
}{
	GGMLTypeF32:     {"f32", 1, 4},
	GGMLTypeF16:     {"f16", 1, 2},
	GGMLTypeQ4_0:    {"q4_0", 32, 18},
	GGMLTypeQ4_1:    {"q4_1", 32, 20},
	4:               {"q4_2 (removed)", 0, 0},
	5:               {"q4_3 (removed)", 0, 0},
	GGMLTypeQ5_0:    {"q5_0", 32, 22},
	GGMLTypeQ5_1:    {"q5_1", 32, 24},
	GGMLTypeQ8_0:    {"q8_0", 32, 34},
	GGMLTypeQ8_1:    {"q8_1", 32, 36},
	GGMLTypeQ2_K:    {"q2_K", 256, 84},
	GGMLTypeQ3_K:    {"q3_K", 256, 110},
	GGMLTypeQ4_K:    {"q4_K", 256, 144},
	GGMLTypeQ5_K:    {"q5_K", 256, 176},
	GGMLTypeQ6_K:    {"q6_K", 256, 210},
	GGMLTypeQ8_K:    {"q8_K", 256, 292},
	GGMLTypeIQ2_XXS: {"iq2_xxs", 256, 66},
	GGMLTypeIQ2_XS:  {"iq2_xs", 256, 74},
	GGMLTypeIQ3_XXS: {"iq3_xxs", 256, 98},
	GGMLTypeIQ1_S:   {"iq1_s", 256, 50},
	GGMLTypeIQ4_NL:  {"iq4_nl", 32, 18},
	GGMLTypeIQ3_S:   {"iq3_s", 256, 110},
	GGMLTypeIQ2_S:   {"iq2_s", 256, 82},
	GGMLTypeIQ4_XS:  {"iq4_xs", 256, 136},
	GGMLTypeI8:      {"i8", 1, 1},
	GGMLTypeI16:     {"i16", 1, 2},
	GGMLTypeI32:     {"i32", 1, 4},
	GGMLTypeI64:     {"i64", 1, 8},
	GGMLTypeF64:     {"f64", 1, 8},
	GGMLTypeIQ1_M:   {"iq1_m", 256, 56},
	GGMLTypeBF16:    {"bf16", 1, 2},
	31:              {"q4_0_4_4 (removed)", 0, 0},
	32:              {"q4_0_4_8 (removed)", 0, 0},
	33:              {"q4_0_8_8 (removed)", 0, 0},
	GGMLTypeTQ1_0:   {"tq1_0", 256, 54},
	GGMLTypeTQ2_0:   {"tq2_0", 256, 66},
	36:              {"iq4_nl_4_4 (removed)", 0, 0},
	37:              {"iq4_nl_4_8 (removed)", 0, 0},
	38:              {"iq4_nl_8_8 (removed)", 0, 0},
	GGMLTypeMXFP4:   {"mxfp4", 32, 17},
	GGMLTypeNVFP4:   {"nvfp4", 64, 36},
	GGMLTypeQ1_0:    {"q1_0", 128, 18},
	GGMLTypeQ2_0:    {"q2_0", 64, 18},
}

// String returns ggml's name for the type (ggml_type_name: "f32", "q4_K", ...); a removed type
// reads "q4_2 (removed)" and so on, a value outside [0, GGMLTypeCount) "ggml_type(N)".
func (t GGMLType) String() string {
	if t >= 0 && t < GGMLTypeCount {
		return typeTraits[t].name
	}
	return fmt.Sprintf("ggml_type(%d)", int32(t))
}

// Supported reports whether ggml can hold tensors of this type: it is in [0, GGMLTypeCount)
// and has not been removed (its block size is not 0). gguf_init_from_reader refuses every
// other type.
func (t GGMLType) Supported() bool { return t >= 0 && t < GGMLTypeCount && typeTraits[t].blockSize > 0 }

// BlockSize returns the number of elements in one block of the type (ggml_blck_size): 1 for
// the plain types, 32, 64, 128 or 256 for the quantized ones, 0 for removed or invalid types.
func (t GGMLType) BlockSize() int64 {
	if t >= 0 && t < GGMLTypeCount {
		return typeTraits[t].blockSize
	}
	return 0
}

// TypeSize returns the size in bytes of one block of the type (ggml_type_size), 0 for removed
// or invalid types.
func (t GGMLType) TypeSize() int64 {
	if t >= 0 && t < GGMLTypeCount {
		return typeTraits[t].typeSize
	}
	return 0
}
