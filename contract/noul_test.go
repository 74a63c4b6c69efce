package contract_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/contract"
)

// TestNoulPromptIsPinned pins the noul contract's messages (their text is noul-v1: a reworded
// prompt is another version). The system text is the seed's binary one, verbatim; the sha256s
// were computed with Python over the system text, a newline and the user text.
func TestNoulPromptIsPinned(t *testing.T) {
	assert.Equal(t, "noul-v1", contract.NoulPromptVersion)
	ev := `{"message": "My card has not arrived."}`
	msgs := contract.NoulMessages(ev, "Is this about a card?", "a card problem", "anything else")
	require.Len(t, msgs, 2)
	assert.Equal(t, contract.ChatMessage{Role: "system", Content: contract.BinarySystem}, msgs[0], "the seed's yes/no system text")
	assert.Equal(t, "Context:\n"+ev+"\n\nQuestion:\nIs this about a card?\nYes means: a card problem\nNo means: anything else", msgs[1].Content)
	assert.Equal(t, "3e6ca4c9f1c84a8f80565f8718d59aac9904b6a0559ab24efb7a4798fe84b6c3",
		contract.PromptSHA256(msgs[0].Content+"\n"+msgs[1].Content), "the noul prompt changed: give it a new NoulPromptVersion")

	msgs = contract.NoulMessages(ev, "", "a card problem", "")
	assert.Equal(t, "7462ef9edf3f07db17ce82c1cafd331ca705b93b64dc7961446353648687517f",
		contract.PromptSHA256(msgs[0].Content+"\n"+msgs[1].Content), "criteria alone: the default question, no empty No line")
	a := contract.NoulMessages(ev, "Is this about a card?", "", "")
	b := contract.NoulMessages(ev, "Is this about a refund?", "", "")
	assert.Equal(t, a[1].Content[:len("Context:\n"+ev+"\n\nQuestion:\n")], b[1].Content[:len("Context:\n"+ev+"\n\nQuestion:\n")],
		"every noul about one state shares its prompt up to the question")
}
