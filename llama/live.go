package llama

import "sync/atomic"

var liveModels, liveContexts, liveBatches, liveTemplates atomic.Int64

// Live reports how many models, contexts and batches this process has created and not yet
// closed. Every handle's Close frees its C object exactly once, so after closing everything
// all three are zero; tests and the soak benchmark check that.
func Live() (models, contexts, batches int64) {
	return liveModels.Load(), liveContexts.Load(), liveBatches.Load()
}
