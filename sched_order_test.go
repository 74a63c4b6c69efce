package gojev

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decodedWithReuse is what a runtime that keeps the previous prompt in its KV cache (prev at
// the start) decodes for prompts in this order: each prompt's tokens after its common prefix
// with the one before.
func decodedWithReuse(prev []int32, ps []*prompt) int {
	n := 0
	for _, p := range ps {
		common := 0
		for common < min(len(prev), len(p.Tokens)) && prev[common] == p.Tokens[common] {
			common++
		}
		n += len(p.Tokens) - common
		prev = p.Tokens
	}
	return n
}

func testPrompt(seq uint64, toks ...int32) *prompt {
	return &prompt{job: &job{seq: seq}, Prompt: Prompt{Tokens: toks}}
}

// TestOrderServesTheOldestBranchFirst: a hand-worked trie. The lone prompt of the oldest
// request (seq 0) goes first; under the shared [1 2], the prompt that ends there precedes its
// extensions, then branch 5 (oldest request 1) before branch 3 (oldest 2), and inside branch
// 3 request 2's prompt before request 3's, though lexicographic order would put it last.
func TestOrderServesTheOldestBranchFirst(t *testing.T) {
	a, b, c := testPrompt(3, 1, 2, 3, 4), testPrompt(1, 1, 2, 5, 6), testPrompt(2, 1, 2, 3, 7)
	d, e, f := testPrompt(1, 1, 2, 5, 8), testPrompt(4, 1, 2), testPrompt(0, 9)
	round := []*prompt{a, b, c, d, e, f}
	order(round, nil)
	assert.Equal(t, []*prompt{f, e, b, d, c, a}, round)
	lex := []*prompt{e, a, c, b, d, f}
	assert.Equal(t, decodedWithReuse(nil, lex), decodedWithReuse(nil, round), "every trie node decoded once, as in lexicographic order")
}

// TestOrderKeepsEveryPrefixShared: on random rounds (shared heads, rows with several prompts,
// duplicates, prompts that are prefixes of others), order is a permutation that decodes exactly
// as few tokens as lexicographic order, the prompts of one request come out in a run whenever
// they share a prefix no other request has, and requests under the same head come out oldest
// first (lexicographic order would sort them by their evidence).
func TestOrderKeepsEveryPrefixShared(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		var round []*prompt
		for seq := range uint64(1 + rng.IntN(12)) {
			head := []int32{7, 7, int32(rng.IntN(3))}
			evidence := []int32{200 - int32(seq), int32(rng.IntN(4))} // unique to the request; lexicographic order puts newer first
			for range 1 + rng.IntN(5) {
				toks := slices.Concat(head, evidence)
				for range rng.IntN(4) {
					toks = append(toks, int32(rng.IntN(3)))
				}
				round = append(round, testPrompt(seq, toks...))
			}
		}
		rng.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		lex := slices.Clone(round)
		slices.SortStableFunc(lex, func(a, b *prompt) int { return slices.Compare(a.Tokens, b.Tokens) })
		got := slices.Clone(round)
		order(got, nil)
		require.ElementsMatch(t, round, got, "trial %d", trial)
		require.Equal(t, decodedWithReuse(nil, lex), decodedWithReuse(nil, got), "trial %d", trial)
		checkOldestFirst(t, trial, got)
		// The same round after a prompt the runtime still holds (one of another round's, or
		// of this one's): the same constraints, and never more decoded from that cache.
		cached := slices.Concat([]int32{7, 7, int32(rng.IntN(3))}, []int32{int32(190 + rng.IntN(20)), int32(rng.IntN(4)), int32(rng.IntN(3))})
		warm := slices.Clone(round)
		order(warm, cached)
		require.ElementsMatch(t, round, warm, "trial %d", trial)
		require.Equal(t, decodedWithReuse(nil, lex), decodedWithReuse(nil, warm), "trial %d: every trie node still decoded once", trial)
		require.LessOrEqual(t, decodedWithReuse(cached, warm), decodedWithReuse(cached, got), "trial %d", trial)
		checkOldestFirst(t, trial, warm)
	}
}

// checkOldestFirst: the prompts of one request come out in a run whenever they share a prefix
// no other request has, and requests under the same head come out oldest first.
func checkOldestFirst(t *testing.T, trial int, got []*prompt) {
	t.Helper()
	for i := 1; i < len(got); i++ {
		for k := i + 1; k < len(got); k++ {
			if got[k].job.seq == got[i-1].job.seq {
				require.Equal(t, got[i-1].job.seq, got[i].job.seq, "trial %d: request %d's prompts are split at %d", trial, got[i-1].job.seq, i)
			}
		}
		if slices.Equal(got[i-1].Tokens[:3], got[i].Tokens[:3]) {
			require.LessOrEqual(t, got[i-1].job.seq, got[i].job.seq, "trial %d: under one head, oldest first", trial)
		}
	}
}

// TestOrderContinuesTheCache: rows that each have two kinds of prompt (a decision, D, and the
// injection detector's question, T, whose system texts differ after the template head) arrive
// one row a round, as when the CPU prepares a row per decode. Between branches of equally old
// requests, the one that continues the prompt decoded last goes first, so a round switches kind
// once instead of twice; an older request still comes first.
func TestOrderContinuesTheCache(t *testing.T) {
	d := func(seq uint64) *prompt { return testPrompt(seq, 1, 10, 11, 100+int32(seq)) }
	tq := func(seq uint64) *prompt { return testPrompt(seq, 1, 20, 21, 22, 100+int32(seq)) }

	d1, t1, d2, t2 := d(1), tq(1), d(2), tq(2)
	round := []*prompt{t2, d1, t1, d2}
	order(round, nil)
	assert.Equal(t, []*prompt{d1, d2, t1, t2}, round, "no cache: token order between the kinds")
	order(round, tq(0).Tokens)
	assert.Equal(t, []*prompt{t1, t2, d1, d2}, round, "after a T, the T branch first")
	order(round, d(0).Tokens)
	assert.Equal(t, []*prompt{d1, d2, t1, t2}, round)
	older := []*prompt{d2, t1, t2}
	order(older, d(0).Tokens)
	assert.Equal(t, []*prompt{t1, t2, d2}, older, "request 1 waits in the T branch: oldest first wins over the cache")

	stream := func(aware bool) int {
		var cached []int32
		n := 0
		for seq := range uint64(10) {
			r := []*prompt{d(seq), tq(seq)}
			if aware {
				order(r, cached)
			} else {
				order(r, nil)
			}
			n += decodedWithReuse(cached, r)
			cached = r[len(r)-1].Tokens
		}
		return n
	}
	// The first round decodes 4 + 4 (D and T share one token). Each later one continues the
	// kind the round before ended with (1 token) and switches once: to D (3 tokens) or to T (4),
	// in turn: 8 + 5×4 + 4×5. Without the cache every round starts with D: 8 + 9×(3+4).
	assert.Equal(t, 48, stream(true))
	assert.Equal(t, 71, stream(false))
}
