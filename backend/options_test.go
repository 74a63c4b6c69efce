package backend_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/backend"
)

func TestParseTemplateKwargs(t *testing.T) {
	kw, warnings, err := backend.ParseTemplateKwargs([]byte(`{"enable_thinking": false, "n": 2, "x": 1.50, "tools": [{"name": "a"}], "none": null}`))
	require.NoError(t, err)
	assert.Empty(t, warnings)
	assert.Equal(t, map[string]any{"enable_thinking": false, "n": json.Number("2"), "x": json.Number("1.50"),
		"tools": []any{map[string]any{"name": "a"}}, "none": nil}, kw)

	_, warnings, err = backend.ParseTemplateKwargs([]byte(`{"enable_thinking": "false", "b": "TRUE", "s": "no"}`))
	require.NoError(t, err)
	require.Len(t, warnings, 2)
	assert.Contains(t, warnings[0], `"enable_thinking" is the string "false", which a template reads as true`)
	assert.Contains(t, warnings[1], "write true without quotes")

	for src, want := range map[string]string{`[1]`: "must be a JSON object", `{"a": }`: "invalid JSON at byte 6", `"x"`: "must be a JSON object"} {
		_, _, err := backend.ParseTemplateKwargs([]byte(src))
		assert.ErrorContains(t, err, want, src)
	}
}
