package gojev

import (
	"context"
	"sync"
)

// flight is one computation of a cached value in flight (flights.start): val and err are set
// before done is closed.
type flight[T any] struct {
	done chan struct{}
	val  T
	err  error
}

// wait returns the flight's value once it has landed, or ctx's error first.
func (f *flight[T]) wait(ctx context.Context) (T, error) {
	select {
	case <-f.done:
		return f.val, f.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// flights computes each key's value once and caches it: the callers that ask for a key while
// its computation is in flight wait for that one instead of starting their own (the rows in
// flight at once that need a rubric's content-free reading or an option's embedding). A
// failed computation is not cached; the next caller computes again. The zero value is ready.
type flights[T any] struct {
	mu     sync.Mutex
	cache  map[string]T
	flying map[string]*flight[T]
}

// cached returns key's value when it has been computed.
func (g *flights[T]) cached(key string) (T, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	v, ok := g.cache[key]
	return v, ok
}

// start returns key's flight: landed already when the value is cached, the one in flight if
// any, else a new one that runs compute in a goroutine of its own (compute must end when the
// Decider closes).
func (g *flights[T]) start(key string, compute func() (T, error)) *flight[T] {
	g.mu.Lock()
	defer g.mu.Unlock()
	if v, ok := g.cache[key]; ok {
		f := &flight[T]{done: make(chan struct{}), val: v}
		close(f.done)
		return f
	}
	if f, ok := g.flying[key]; ok {
		return f
	}
	f := &flight[T]{done: make(chan struct{})}
	if g.flying == nil {
		g.flying, g.cache = map[string]*flight[T]{}, map[string]T{}
	}
	g.flying[key] = f
	go func() {
		f.val, f.err = compute()
		g.mu.Lock()
		if f.err == nil {
			g.cache[key] = f.val
		}
		delete(g.flying, key)
		g.mu.Unlock()
		close(f.done)
	}()
	return f
}
