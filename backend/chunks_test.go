package backend

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestChunks(t *testing.T) {
	tests := []struct {
		n, size int
		want    [][2]int
	}{
		{0, 4, nil},
		{1, 4, [][2]int{{0, 1}}},
		{4, 4, [][2]int{{0, 4}}},
		{5, 4, [][2]int{{0, 2}, {2, 5}}},
		{513, 512, [][2]int{{0, 256}, {256, 513}}},
		{10, 3, [][2]int{{0, 2}, {2, 5}, {5, 7}, {7, 10}}},
	}
	for _, tc := range tests {
		got := Chunks(tc.n, tc.size)
		assert.Equal(t, tc.want, got, "n=%d size=%d", tc.n, tc.size)
		for _, s := range got {
			assert.LessOrEqual(t, s[1]-s[0], tc.size)
			if tc.n >= 2 {
				assert.GreaterOrEqual(t, s[1]-s[0], 2, "no one-token batch")
			}
		}
	}
}

func TestDecodePlanAlignsBatches(t *testing.T) {
	toks := func(n int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(i)
		}
		return out
	}
	for _, tc := range []struct {
		name        string
		cached, tok int // lengths of a cache and a prompt sharing their first min(cached, tok) tokens
		nBatch      int
		wantKeep    int
		wantSpans   [][2]int
	}{
		{"empty cache", 0, 210, 512, 0, [][2]int{{0, 210}}},
		{"reuse rounded down to 4", 103, 210, 512, 100, [][2]int{{100, 210}}},
		{"at least two tokens decoded", 210, 210, 512, 208, [][2]int{{208, 210}}},
		{"long prompt, aligned inner boundaries", 0, 1100, 512, 0, [][2]int{{0, 364}, {364, 732}, {732, 1100}}},
		{"reuse then split", 6, 300, 64, 4, [][2]int{{4, 60}, {60, 120}, {120, 180}, {180, 240}, {240, 300}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keep, spans := DecodePlan(toks(tc.cached), toks(tc.tok), tc.nBatch)
			assert.Equal(t, tc.wantKeep, keep)
			assert.Equal(t, tc.wantSpans, spans)
			assert.Equal(t, 0, keep%Align)
			for i, s := range spans {
				assert.LessOrEqual(t, s[1]-s[0], tc.nBatch)
				assert.GreaterOrEqual(t, s[1]-s[0], 2)
				if i > 0 {
					assert.Equal(t, 0, s[0]%Align, "inner boundary %d", s[0])
					assert.Equal(t, spans[i-1][1], s[0])
				}
			}
			assert.Equal(t, tc.tok, spans[len(spans)-1][1])
		})
	}
}
