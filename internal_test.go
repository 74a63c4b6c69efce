package gojev

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/backend/backendtest"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/internal/testenv"
)

// byteRuntime is a model-free runtime (one token per byte), every listed letter equally likely.
type byteRuntime = backendtest.Scripted

// TestARowIsValidatedOnce: a decision validates its row once, however many prompts it
// renders (8 cyclic permutations here; a knockout's passes), and New checks its options once.
// (Each permutation's render validated it again: 1 + 8 times.)
func TestARowIsValidatedOnce(t *testing.T) {
	var validations, checks int
	defer func(v func(contract.Row) error, c func(Options) error) { validate, checkOptions = v, c }(validate, checkOptions)
	validate = func(r contract.Row) error { validations++; return r.Validate() }
	checkOptions = func(o Options) error { checks++; return o.check() }

	d, err := New(context.Background(), &byteRuntime{}, Options{Debias: debias.Cyclic})
	require.NoError(t, err)
	defer d.Close()
	assert.Equal(t, 1, checks, "New checks its options once")
	validations = 0
	var opts []contract.Option
	for i := range 8 {
		opts = append(opts, contract.Option{ID: fmt.Sprint("o", i), Description: fmt.Sprint("Option ", i)})
	}
	res, err := d.Decide(context.Background(), contract.Row{ID: "r", State: "s", Question: "q", Options: opts})
	require.NoError(t, err)
	assert.Len(t, res.Debias.Permutations, 7)
	assert.Equal(t, 1, validations, "one validation for the row and its 8 permutations")

	k, err := New(context.Background(), &byteRuntime{}, Options{Knockout: KnockoutOptions{Method: ManyKnockout}})
	require.NoError(t, err)
	defer k.Close()
	validations = 0
	var many []contract.Option
	for i := range 40 {
		many = append(many, contract.Option{ID: fmt.Sprint("o", i), Description: fmt.Sprint("Option ", i)})
	}
	res, err = k.Decide(context.Background(), contract.Row{ID: "k", State: "s", Question: "q", Options: many})
	require.NoError(t, err)
	assert.Len(t, res.Knockout.Passes, 4)
	assert.Equal(t, 1, validations, "one validation for a knockout and its passes")
}

// TestOpenChecksItsOptionsOnce: Open checks the options, then builds the Decider without
// checking them again (it went through New, which checked them a second time).
func TestOpenChecksItsOptionsOnce(t *testing.T) {
	checks := 0
	defer func(c func(Options) error) { checkOptions = c }(checkOptions)
	checkOptions = func(o Options) error { checks++; return o.check() }
	d, err := Open(context.Background(), testenv.SmallModel(t), Options{Runtime: backend.InProcessOptions{NThreads: 2}})
	require.NoError(t, err)
	defer d.Close()
	assert.Equal(t, 1, checks)
}

// deviceRuntime is byteRuntime on named devices (backend.InProcess.Devices), whose decodes
// block on gate once blocking is set, signalling started first.
type deviceRuntime struct {
	byteRuntime
	devices  []string
	blocking chan struct{} // closed: decodes block
	started  chan struct{}
	gate     chan struct{}
}

func (r *deviceRuntime) Devices() ([]string, []string) { return r.devices, nil }
func (r *deviceRuntime) NextToken(ctx context.Context, prompt, ids []int32) (backend.Readout, error) {
	select {
	case <-r.blocking:
		select {
		case r.started <- struct{}{}:
		default:
		}
		<-r.gate
	default:
	}
	return r.byteRuntime.NextToken(ctx, prompt, ids)
}

// TestPreparingOverlapsAGPUDecode: with every layer on a GPU (no CPU among the devices), a row
// is prepared while another row's decode is in flight; where the CPU decodes, preparing waits
// for the decode (d.cpu), as it did everywhere before (half an H200 run's wall time went to
// preparing while serialised).
func TestPreparingOverlapsAGPUDecode(t *testing.T) {
	row := func(id string) contract.Row {
		return contract.Row{ID: id, State: "s", Question: "q", Options: []contract.Option{{ID: "a", Description: "A"}, {ID: "b", Description: "B"}}}
	}
	for _, c := range []struct {
		devices []string
		overlap bool
	}{{[]string{"NVIDIA H200"}, true}, {[]string{"NVIDIA H200", "CPU"}, false}, {[]string{"CPU"}, false}} {
		t.Run(strings.Join(c.devices, "+"), func(t *testing.T) {
			rt := &deviceRuntime{devices: c.devices, blocking: make(chan struct{}), started: make(chan struct{}, 1), gate: make(chan struct{})}
			d, err := New(context.Background(), rt, Options{})
			require.NoError(t, err)
			defer d.Close()
			var once sync.Once
			open := func() { once.Do(func() { close(rt.gate) }) }
			defer open() // before Close: a failed case leaves no decode blocked
			assert.Equal(t, !c.overlap, d.serial)
			close(rt.blocking)
			first, err := d.Begin(context.Background(), row("1"))
			require.NoError(t, err)
			<-rt.started // row 1's decode is in flight, and blocked
			begun := make(chan *Call, 1)
			go func() {
				second, err := d.Begin(context.Background(), row("2"))
				assert.NoError(t, err)
				begun <- second
			}()
			var second *Call
			if c.overlap {
				select {
				case second = <-begun:
				case <-time.After(10 * time.Second):
					t.Fatal("row 2 was not prepared while row 1 decoded on the GPU")
				}
				open()
			} else {
				select {
				case <-begun:
					t.Fatal("row 2 was prepared while row 1 decoded on the CPU")
				case <-time.After(200 * time.Millisecond):
				}
				open()
				second = <-begun
			}
			for _, call := range []*Call{first, second} {
				res, err := call.Wait(context.Background())
				require.NoError(t, err)
				assert.Equal(t, "a", res.Chosen, "equal letters: the first listed option")
			}
		})
	}
}
