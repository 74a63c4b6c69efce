package cache

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDirAndModel(t *testing.T) {
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	for _, tc := range []struct{ env, want string }{
		{"", filepath.Join(home, ".cache", "gojev")},
		{"/srv/gojev-cache", "/srv/gojev-cache"},
	} {
		t.Setenv("GOJEV_CACHE", tc.env)
		d, err := Dir()
		require.NoError(t, err)
		assert.Equal(t, tc.want, d)
		m, err := Model(SmallModelFile)
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(tc.want, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"), m)
	}
	t.Setenv("GOJEV_CACHE", "rel/cache")
	d, err := Dir()
	require.NoError(t, err)
	assert.True(t, filepath.IsAbs(d), "a relative $GOJEV_CACHE is made absolute")
}
