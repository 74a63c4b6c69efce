package gojev_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/internal/testenv"
)

// A ChatML template that prints the date, as Llama 3.1's and others' do.
const datedChatML = `{{ '<|im_start|>system\nToday is ' + strftime_now('%d %B %Y') + '.\n' }}` +
	`{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}{% endfor %}` +
	`{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`

// TestPinnedDateGivesTheSameHashWhicheverRenderer: a template that reads the clock renders
// from the pinned date, recorded in every result; the same inputs and date give the same
// prompt_sha256 on every run and with either renderer, and another date changes it.
func TestPinnedDateGivesTheSameHashWhicheverRenderer(t *testing.T) {
	row := exampleRows(t)[0]
	day := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	hash := func(renderer string, at time.Time) (string, string) {
		d := openDefault(t, gojev.Options{Runtime: backend.InProcessOptions{Options: backend.Options{TemplateTime: at}, Renderer: renderer, ChatTemplate: datedChatML}})
		ps, err := d.Render(context.Background(), row)
		p := ps[0]
		require.NoError(t, err)
		assert.Contains(t, p.Text, "Today is "+at.Format("02 January 2006")+".")
		return p.SHA256, d.Check().TemplateDate
	}
	goHash, date := hash(backend.RendererGo, day)
	assert.Equal(t, "2026-01-02", date)
	again, _ := hash(backend.RendererGo, day)
	assert.Equal(t, goHash, again, "same inputs and date, same hash")
	llHash, llDate := hash(backend.RendererLlama, day)
	assert.Equal(t, goHash, llHash, "the llama.cpp renderer reads the same pinned clock")
	assert.Equal(t, "2026-01-02", llDate)
	next, _ := hash(backend.RendererLlama, day.AddDate(0, 0, 1))
	assert.NotEqual(t, goHash, next, "another date, another prompt")
}

// TestDecisionsThroughTheServerMatchInProcess runs the same rows through the HTTP runtime
// (llama-server from the same pin) and in-process, under both contracts and with PriDe, through
// the same Decider code: same prompts, same choices, probabilities within 1e-4, the runtime
// recorded in each result.
func TestDecisionsThroughTheServerMatchInProcess(t *testing.T) {
	model := testenv.SmallModel(t)
	srv := testenv.LlamaServer(t, model)
	ctx := context.Background()
	rows := exampleRows(t)[:4]
	for _, c := range []gojev.Contract{gojev.Direct, gojev.Binary} {
		t.Run(c.String(), func(t *testing.T) {
			remote, err := gojev.New(ctx, backend.NewHTTP(srv.URL, backend.HTTPOptions{}), gojev.Options{Contract: c})
			require.NoError(t, err)
			defer remote.Close()
			local := openDefault(t, gojev.Options{Contract: c})
			assert.Equal(t, local.Check().Slots, remote.Check().Slots)
			assert.Equal(t, local.Check().Yes, remote.Check().Yes)
			assert.True(t, remote.Check().BoundaryHolds, "the start-up checks ran on the server too")
			assert.Equal(t, srv.URL, remote.Check().Backend)
			wantAll, err := local.DecideAll(ctx, rows)
			require.NoError(t, err)
			for i, row := range rows {
				want := wantAll[i].Result
				require.NoError(t, wantAll[i].Err)
				got, err := remote.Decide(ctx, row)
				require.NoError(t, err)
				assert.Equal(t, "in-process", want.Backend)
				assert.Equal(t, srv.URL, got.Backend)
				assert.Equal(t, "server", got.Renderer)
				assert.Equal(t, want.PromptSHA256, got.PromptSHA256)
				assert.Equal(t, want.Chosen, got.Chosen, "row %v", row.ID)
				assert.InDelta(t, want.Probability, got.Probability, 1e-4)
				for i := range want.Options {
					assert.InDelta(t, want.Options[i].Probability, got.Options[i].Probability, 1e-4)
					assert.Nil(t, got.Options[i].Logit, "the server returns log-probabilities only")
				}
				require.Len(t, got.Candidates, len(want.Candidates))
				for i := range want.Candidates {
					assert.Equal(t, want.Candidates[i].PromptSHA256, got.Candidates[i].PromptSHA256)
					assert.InDelta(t, want.Candidates[i].PYes, got.Candidates[i].PYes, 1e-4)
				}
			}
		})
	}
	t.Run("pride", func(t *testing.T) {
		remote, err := gojev.New(ctx, backend.NewHTTP(srv.URL, backend.HTTPOptions{}), gojev.Options{Debias: debias.PriDe})
		require.NoError(t, err)
		defer remote.Close()
		local := openDefault(t, gojev.Options{Debias: debias.PriDe})
		pl, _, err := local.EstimatePrior(ctx, rows)
		require.NoError(t, err)
		pr, _, err := remote.EstimatePrior(ctx, rows)
		require.NoError(t, err)
		for k, lp := range pl.ByOptions {
			require.Contains(t, pr.ByOptions, k)
			for i := range lp.Prior {
				assert.InDelta(t, lp.Prior[i], pr.ByOptions[k].Prior[i], 1e-4, "%d options, letter %d", k, i)
			}
		}
		local.SetPrior(pl)
		remote.SetPrior(pr)
		for _, row := range rows {
			want, err := local.Decide(ctx, row)
			require.NoError(t, err)
			got, err := remote.Decide(ctx, row)
			require.NoError(t, err)
			assert.Equal(t, want.Chosen, got.Chosen)
			assert.Equal(t, want.Debias.RawChosen, got.Debias.RawChosen)
			assert.InDelta(t, want.Probability, got.Probability, 1e-4)
		}
	})
}
