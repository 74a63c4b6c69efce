package gojev_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/internal/testenv"
	"github.com/gojev/gojev/llama"
)

// rssBytes returns the process's resident set size (VmRSS in /proc/self/status), after a
// garbage collection that returns freed Go memory to the OS.
func rssBytes(t *testing.T) int64 {
	t.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	f, err := os.Open("/proc/self/status")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// soakRows returns k copies of one example row under other ids and labels: they render the
// same prompt, so after the first decision only its last two tokens are decoded again (the
// rest stays in the KV cache). A full decode of the prompt costs ~0.7 s on a 2-core machine;
// this ~30 ms.
func soakRows(t *testing.T, k int) []contract.Row {
	base := exampleRows(t)[0]
	rows := make([]contract.Row, k)
	for i := range rows {
		r := base
		r.ID = fmt.Sprintf("soak-%d", i)
		r.Label = base.Options[i%len(base.Options)].ID
		rows[i] = r
	}
	return rows
}

// TestSoak makes many decisions in one process with one Decider and checks that the resident
// set size after warm-up grows by less than 5 %, and that Close frees every C object.
//
// JEV_SOAK_DECISIONS sets the count: `make test` runs 200; .ci/run runs 3,000 as its own
// step (make soak: 10,000). The rows share one prompt (see soakRows), so every decision renders, tokenizes,
// checks for special text and the boundary, trims the KV cache, decodes the prompt's last two
// tokens and scores, but does not decode the whole prompt again: it soaks the Go and cgo
// paths of a decision, not a long llama.cpp decode.
func TestSoak(t *testing.T) {
	if runtime.GOOS != "linux" {
		testenv.Missing(t, "reads the resident set size from /proc (Linux)")
	}
	n := 200
	if s := os.Getenv("JEV_SOAK_DECISIONS"); s != "" {
		var err error
		n, err = strconv.Atoi(s)
		require.NoError(t, err, "JEV_SOAK_DECISIONS")
	}
	require.GreaterOrEqual(t, n, 100)
	warmup := max(50, n/10)

	m0, c0, b0 := llama.Live()
	d, err := gojev.Open(context.Background(), testenv.SmallModel(t), gojev.Options{Runtime: backend.InProcessOptions{NThreads: 1}})
	require.NoError(t, err)
	rows := soakRows(t, 4)
	ctx := context.Background()
	var rssWarm, heapWarm int64
	var start time.Time
	tokens := 0
	for i := range n {
		if i == warmup {
			rssWarm = rssBytes(t)
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			heapWarm = int64(ms.HeapAlloc)
			start = time.Now()
		}
		dec, err := d.Decide(ctx, rows[i%len(rows)])
		require.NoError(t, err, "decision %d", i)
		require.Len(t, dec.Options, len(rows[0].Options))
		tokens += dec.NPromptTokens
	}
	elapsed := time.Since(start)
	rssEnd := rssBytes(t)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	growth := 100 * float64(rssEnd-rssWarm) / float64(rssWarm)
	t.Logf("soak: %d decisions in one process (one %d-token prompt under %d ids, so each decodes its last 2 tokens; 1 thread); after %d warm-up decisions: %.1f ms a decision; RSS %.1f MiB -> %.1f MiB (%+.2f %%); Go heap %.1f MiB -> %.1f MiB",
		n, tokens/n, len(rows), warmup, elapsed.Seconds()*1000/float64(n-warmup), mib(rssWarm), mib(rssEnd), growth, mib(heapWarm), mib(int64(ms.HeapAlloc)))
	assert.Less(t, growth, 5.0, "RSS after warm-up grows by less than 5 %%")

	m1, c1, b1 := llama.Live()
	assert.Equal(t, [3]int64{m0 + 1, c0 + 1, b0 + 1}, [3]int64{m1, c1, b1}, "one model, context and batch while open")
	require.NoError(t, d.Close())
	m2, c2, b2 := llama.Live()
	assert.Equal(t, [3]int64{m0, c0, b0}, [3]int64{m2, c2, b2}, "Close frees every C object")
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
