package decide_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/decide"
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
		d := openDefault(t, decide.Options{Renderer: renderer, ChatTemplate: datedChatML, TemplateTime: at})
		p, err := d.Render(context.Background(), row)
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

// TestDecisionsThroughTheServerMatchInProcess runs the same rows through the HTTP backend
// (llama-server from the same pin) and in-process: same prompts, same choices, the backend
// recorded in each result.
func TestDecisionsThroughTheServerMatchInProcess(t *testing.T) {
	model := testenv.SmallModel(t)
	srv := testenv.LlamaServer(t, model)
	ctx := context.Background()
	remote, err := decide.New(ctx, backend.NewHTTP(srv.URL, backend.HTTPOptions{}))
	require.NoError(t, err)
	local := openDefault(t, decide.Options{})
	assert.Equal(t, local.Slots(), remote.Slots())
	for _, row := range exampleRows(t)[:4] {
		want, err := local.Decide(ctx, row)
		require.NoError(t, err)
		got, err := remote.Decide(ctx, row)
		require.NoError(t, err)
		assert.Equal(t, "in-process", want.Backend)
		assert.Equal(t, srv.URL, got.Backend)
		assert.Equal(t, "server", got.Renderer)
		assert.Equal(t, want.PromptSHA256, got.PromptSHA256)
		assert.Equal(t, want.Chosen, got.Chosen)
		for i := range want.Options {
			assert.InDelta(t, want.Options[i].Probability, got.Options[i].Probability, 1e-4)
			assert.Nil(t, got.Options[i].Logit)
		}
	}
	// The start-up checks ran on the server too.
	assert.True(t, remote.Check().BoundaryHolds)
	assert.Equal(t, srv.URL, remote.Check().Backend)
}
