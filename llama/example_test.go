package llama_test

import (
	"context"
	"fmt"
	"log"

	"github.com/gojev/gojev/llama"
)

// modelFile is the GGUF model the example loads: here the small test model (SmolLM2-135M), set
// by TestMain.
var modelFile string

// Load a model, decode a prompt as sequence 0 and read the next-token logits of its last
// position. Every handle is closed by its one owner.
func Example() {
	m, err := llama.LoadModel(modelFile, llama.DefaultModelParams()) // validated before llama.cpp sees it
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	c, err := llama.NewContext(m, llama.ContextParams{NCtx: 2048, NBatch: 512, NThreads: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	tokens, err := m.Vocab().Tokenize("<|im_start|>user\nHello<|im_end|>\n", false, true)
	if err != nil {
		log.Fatal(err)
	}
	b, err := llama.NewBatch(len(tokens), 1)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	last := 0
	for i, t := range tokens {
		if last, err = b.Add(t, i, []int{0}, i == len(tokens)-1); err != nil {
			log.Fatal(err)
		}
	}
	if err := c.Decode(context.Background(), b); err != nil {
		log.Fatal(err)
	}
	logits, err := c.Logits(last) // []float32 of length n_vocab, a copy
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(logits) == m.Vocab().NVocab())
	// Output: true
}
