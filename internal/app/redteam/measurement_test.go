package redteam

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReportText(t *testing.T) {
	rep := &Report{Rows: 40, Catalogue: "gojev-injection-v1", Settings: []string{"pride", "guarded+detect"},
		Figures: []Figures{
			{Setting: "pride", Family: "letter", Moved: 0.25, MovedAnswered: 0.2, CleanAccuracy: 0.7, AttackedAccuracy: 0.5, MovedMeanProbability: 0.61},
			{Setting: "guarded+detect", Family: "letter", Moved: 0.05, Detected: true, AttackedFlagged: 0.9, CleanFlagged: 0.1, DetectorAUC: 0.955},
		},
		Costs: []Cost{{Setting: "pride", Rows: 80, WallPerRowS: 0.5, WallVsFirst: 1, DecodedPerRow: 300, DecodedVsFirst: 1}}}
	var b bytes.Buffer
	rep.WriteText(&b)
	lines := strings.Split(b.String(), "\n")
	assert.Equal(t, "jev redteam: 40 rows, gojev-injection-v1, settings pride, guarded+detect", lines[0])
	assert.Regexp(t, `^  pride\s+letter\s+25\.0%\s+20\.0%\s+70\.0%\s+50\.0%\s+0\.0%\s+0\.610\s+—\s+—\s+—$`, lines[3])
	assert.Regexp(t, `^  guarded\+detect\s+letter\s+5\.0%.*\s+90\.0%\s+10\.0%\s+0\.955$`, lines[4])
	assert.Contains(t, b.String(), "  pride                            80       0.50     1.00×          300     1.00×")

	var j bytes.Buffer
	require.NoError(t, rep.WriteJSON(&j))
	var back Report
	require.NoError(t, json.Unmarshal(j.Bytes(), &back))
	assert.Equal(t, rep.Figures, back.Figures)

	var l bytes.Buffer
	Families().WriteText(&l)
	for _, f := range Families().Families {
		assert.Contains(t, l.String(), "\n"+f.Name+" (names the target's ")
	}
	assert.Contains(t, l.String(), "  source: ")
}
