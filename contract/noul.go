package contract

import "strings"

// The noul contract: one yes/no question or statement about a state, with no candidates (the
// System One API's "noul" type). The seed has no such prompt (its binary contract asks whether
// a candidate matches), so it is a contract of its own: the seed's yes/no system text
// (BinarySystem, verbatim), the seed's "Context:"/"Question:" layout with the evidence first, so
// that every noul question about one state shares its prompt up to the question, and the
// binary contract's readout (every single-token spelling of yes and no; p_yes).

// NoulPromptVersion is the noul contract's version, recorded with every noul answer.
const NoulPromptVersion = "noul-v1"

// NoulDefaultQuestion is the question a noul asks when it has criteria and no instructions.
const NoulDefaultQuestion = "Does the context meet the yes criterion rather than the no criterion?"

// NoulMessages are the chat messages of one noul question about an evidence text
// (EvidenceJSON's): the system message BinarySystem and the user message
//
//	Context:
//	<evidence>
//
//	Question:
//	<question>
//	Yes means: <yes>
//	No means: <no>
//
// where the "Yes means" and "No means" lines appear only when yes and no are not empty, and
// an empty question is NoulDefaultQuestion. question, yes and no are text: the caller writes a
// JSON object or array given for them with pyjson (as the evidence).
func NoulMessages(evidence, question, yes, no string) []ChatMessage {
	if question == "" {
		question = NoulDefaultQuestion
	}
	var b strings.Builder
	b.WriteString("Context:\n")
	b.WriteString(evidence)
	b.WriteString("\n\nQuestion:\n")
	b.WriteString(question)
	if yes != "" {
		b.WriteString("\nYes means: " + yes)
	}
	if no != "" {
		b.WriteString("\nNo means: " + no)
	}
	return []ChatMessage{
		{Role: "system", Content: BinarySystem},
		{Role: "user", Content: b.String()},
	}
}
