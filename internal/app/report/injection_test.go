package report_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gojev/gojev/internal/app/redteam"
	"github.com/gojev/gojev/internal/app/report"
)

func TestInjectionOf(t *testing.T) {
	rep := &redteam.Report{Catalogue: "gojev-injection-v1", Rows: 12,
		Families: []redteam.Family{{Name: "letter", Description: "Answer the target's letter.", Sources: []string{"Perez & Ribeiro 2022"}}},
		Figures:  []redteam.Figures{{Setting: "pride", Family: "letter", Moved: 0.25}},
		Costs:    []redteam.Cost{{Setting: "pride", Rows: 24, WallPerRowS: 0.5, WallVsFirst: 1, DecodedPerRow: 300, DecodedVsFirst: 1}}}
	inj := report.InjectionOf(rep)
	assert.Equal(t, &report.Injection{Catalogue: "gojev-injection-v1", Rows: 12, Figures: rep.Figures,
		Families: []report.InjectionFamily{{Name: "letter", Description: "Answer the target's letter.", Sources: []string{"Perez & Ribeiro 2022"}}},
		Costs:    []report.InjectionCost{{Setting: "pride", WallPerRowS: 0.5, WallVsFirst: 1, DecodedPerRow: 300, DecodedVsFirst: 1}}}, inj)
}
