package llama_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/llama"
)

func TestVersionMatchesThePin(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "third_party", "llama.cpp.pin"))
	require.NoError(t, err)
	pin := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(k, "#") {
			pin[k] = v
		}
	}
	assert.Equal(t, pin["LLAMA_CPP_TAG"], llama.LlamaCppTag)
	assert.Equal(t, pin["LLAMA_CPP_COMMIT"], llama.LlamaCppCommit)
}
