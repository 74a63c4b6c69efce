// Package contract is the seed's prompt contracts in Go (contract.rs of jev-bridge 0.6.0):
// the frozen strings (DirectSystem, PromptVersion, BinarySystem, BinaryPromptVersion),
// the chat messages built from a row with Python's JSON layout, the answer-slot and boundary
// checks a model must pass before it is scored, scoring (softmax over the listed options,
// log-probabilities over the vocabulary), the prompt SHA-256, and the JSONL row format.
//
// It is pure Go: it reaches tokenization only through the Tokenizer interface, so it can be
// tested without a model, and it never imports the cgo layer.
package contract
