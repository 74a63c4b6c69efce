package debias

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// uniformPrior is a valid prior of model for k options, each letter 1/k.
func uniformPrior(model ModelID, k int) *Prior {
	p := make([]float64, k)
	for i := range p {
		p[i] = 1 / float64(k)
	}
	return &Prior{Method: PriDe, Reference: Reference, PromptVersion: "direct-options-v1", Model: model,
		ByOptions: map[int]LetterPrior{k: {Letters: Letters(k), Prior: p, SampleRows: 10}}}
}

// Option counts 2..16 (a Prior holds at most 16 letters, Letters): one Add each.
var concurrentCounts = func() []int {
	var ks []int
	for k := 2; k <= 16; k++ {
		ks = append(ks, k)
	}
	return ks
}()

// The subprocess side of TestStoreAddConcurrentProcesses: with these set, the test binary
// only Adds one prior to the folder and exits.
const (
	envAddDir = "GOJEV_TEST_DEBIAS_ADD_DIR"
	envAddK   = "GOJEV_TEST_DEBIAS_ADD_K"
)

var lockModel = ModelID{File: "m.gguf", SHA256: "ab"}

// Adds to one folder for the same model and contract from many goroutines at once each keep
// their option count: the folder's file ends holding every one (none lost to another Add's
// read-merge-write).
func TestStoreAddConcurrentGoroutines(t *testing.T) {
	for round := range 5 {
		s := Store{Dir: t.TempDir()}
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make([]error, len(concurrentCounts))
		for i, k := range concurrentCounts {
			wg.Go(func() {
				<-start
				errs[i] = s.Add(uniformPrior(lockModel, k))
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "k=%d", concurrentCounts[i])
		}
		kept, err := s.Kept(lockModel, "direct-options-v1")
		require.NoError(t, err)
		require.NotNil(t, kept)
		require.Equal(t, concurrentCounts, sortedKeys(kept.ByOptions), "round %d: every goroutine's option count kept", round)
	}
}

// The same across processes (two jev runs sharing the cache folder): the test binary re-runs
// itself once per option count, all at once, each Adding one prior to the same folder.
func TestStoreAddConcurrentProcesses(t *testing.T) {
	if dir := os.Getenv(envAddDir); dir != "" {
		k, err := strconv.Atoi(os.Getenv(envAddK))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if err := (Store{Dir: dir}).Add(uniformPrior(lockModel, k)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for round := range 3 {
		s := Store{Dir: t.TempDir()}
		cmds := make([]*exec.Cmd, len(concurrentCounts))
		for i, k := range concurrentCounts {
			cmd := exec.Command(os.Args[0], "-test.run=^TestStoreAddConcurrentProcesses$", "-test.count=1")
			cmd.Env = append(os.Environ(), envAddDir+"="+s.Dir, envAddK+"="+strconv.Itoa(k))
			cmd.Stderr = os.Stderr
			require.NoError(t, cmd.Start())
			cmds[i] = cmd
		}
		for i, cmd := range cmds {
			assert.NoError(t, cmd.Wait(), "k=%d", concurrentCounts[i])
		}
		kept, err := s.Kept(lockModel, "direct-options-v1")
		require.NoError(t, err)
		require.NotNil(t, kept)
		require.Equal(t, concurrentCounts, sortedKeys(kept.ByOptions), "round %d: every process's option count kept", round)
	}
}

func sortedKeys(m map[int]LetterPrior) []int {
	var ks []int
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
