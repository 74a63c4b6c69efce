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
