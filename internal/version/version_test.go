package version_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gojev/gojev/internal/version"
	"github.com/gojev/gojev/llama"
)

// The versions a run file records: gojev's own module here (a test binary of the checkout),
// and the llama.cpp pin.
func TestVersions(t *testing.T) {
	assert.True(t, strings.HasPrefix(version.Jev(), "(devel)"), version.Jev())
	assert.Equal(t, llama.LlamaCppTag+" ("+llama.LlamaCppCommit[:12]+")", version.LlamaCpp())
	assert.Regexp(t, `^v\d+\.\d+\.\d+ \([0-9a-f]{12}\)$`, version.LlamaCpp())
}
