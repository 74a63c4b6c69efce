// Package decide makes direct-contract decisions with one loaded model: it owns the model,
// its llama context and batch, renders each row's prompt through the model's chat template,
// runs the contract's checks, decodes, and scores the answer letters. It is the library API a
// Go service embeds; cmd/jev is a thin command-line front end over it.
//
//	d, err := decide.Open("model.gguf", decide.Options{})
//	...
//	defer d.Close()
//	dec, err := d.Decide(ctx, row) // row from contract.ParseRow
//
// Open refuses a model that fails the start-up checks (answer slots, boundary). A Decider is
// safe for concurrent use; decisions share one llama context and run one at a time.
package decide

// DefaultModelFile is the file name of the default model that `make model` assembles under
// the cache's models/ folder: Qwen2.5-Coder-1.5B-Instruct Q4_K_M (scripts/models.tsv).
const DefaultModelFile = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
