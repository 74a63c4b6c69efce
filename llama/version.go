package llama

// The llama.cpp release this package is built and tested against: third_party/llama.cpp.pin
// (a test keeps the two equal). The build scripts fetch exactly this commit.
const (
	// LlamaCppTag is the upstream tag (ggml-org/llama.cpp).
	LlamaCppTag = "v0.4.0"
	// LlamaCppCommit is the pinned commit.
	LlamaCppCommit = "80fb11ac73e66d89eae2c6a91d8a77428fa733ed"
)
