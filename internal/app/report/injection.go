package report

import (
	"fmt"
	"html/template"
	"path/filepath"
	"strings"

	"github.com/gojev/gojev/internal/app/redteam"
)

// Injection is the prompt-injection section of a report (jev redteam): the figures of every
// setting on every attack family, the families with their sources, and each decoded
// setting's cost.
type Injection struct {
	Catalogue string            `json:"catalogue"`
	Rows      int               `json:"rows"`
	Families  []InjectionFamily `json:"families"`
	Figures   []redteam.Figures `json:"figures"`
	Costs     []InjectionCost   `json:"costs"`
}

// InjectionOf is a red-team run's injection section: its figures, families and costs.
func InjectionOf(rep *redteam.Report) *Injection {
	inj := &Injection{Catalogue: rep.Catalogue, Rows: rep.Rows, Figures: rep.Figures}
	for _, f := range rep.Families {
		inj.Families = append(inj.Families, InjectionFamily{Name: f.Name, Description: f.Description, Sources: f.Sources})
	}
	for _, c := range rep.Costs {
		inj.Costs = append(inj.Costs, InjectionCost{Setting: c.Setting, WallPerRowS: c.WallPerRowS, WallVsFirst: c.WallVsFirst,
			DecodedPerRow: c.DecodedPerRow, DecodedVsFirst: c.DecodedVsFirst})
	}
	return inj
}

// RedteamPage is the HTML report of a red-team run written under dir: the evaluation of every
// decoded setting's clean rows (dir/<setting>/clean.jsonl) and the injection section.
func RedteamPage(rep *redteam.Report, dir string) (*Report, error) {
	var runs []*Run
	for _, s := range rep.Settings {
		rs, err := Load(filepath.Join(redteam.Dir(dir, s), "clean.jsonl"), "clean "+s)
		if err != nil {
			return nil, err
		}
		runs = append(runs, rs...)
	}
	page := Build(runs)
	page.Injection = InjectionOf(rep)
	return page, nil
}

// InjectionFamily is one attack family as the section describes it.
type InjectionFamily struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Sources     []string `json:"sources"`
}

// InjectionCost is one decoded setting's cost per row, and its ratios to the first.
type InjectionCost struct {
	Setting        string  `json:"setting"`
	WallPerRowS    float64 `json:"wall_per_row_s"`
	WallVsFirst    float64 `json:"wall_vs_first"`
	DecodedPerRow  float64 `json:"decoded_tokens_per_row"`
	DecodedVsFirst float64 `json:"decoded_vs_first"`
}

// settings lists the section's settings in the order the figures first name them.
func (inj *Injection) settings() []string {
	var out []string
	for _, f := range inj.Figures {
		if !containsString(out, f.Setting) {
			out = append(out, f.Setting)
		}
	}
	return out
}

func containsString(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// svgMoved draws the moved rate (and, hatched lighter, the part acted on: not abstained) of
// every setting, grouped by family.
func svgMoved(inj *Injection) template.HTML {
	if inj == nil || len(inj.Figures) == 0 {
		return ""
	}
	settings := inj.settings()
	var families []string
	for _, f := range inj.Figures {
		if !containsString(families, f.Family) {
			families = append(families, f.Family)
		}
	}
	fig := map[string]redteam.Figures{}
	for _, f := range inj.Figures {
		fig[f.Setting+"\x00"+f.Family] = f
	}
	const h, top, left = 300, 20, 46
	bottom := 46 + 16*((len(settings)+3)/4)
	bar := 14
	group := len(settings)*bar + 24
	w := max(left+len(families)*group+20, left+4*190)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`, w, h+bottom)
	y := func(v float64) float64 { return top + (1-v)*float64(h-top) }
	for _, t := range []float64{0, 0.25, 0.5, 0.75, 1} {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">%.0f%%</text>`,
			left, w-10, y(t), y(t), left-4, y(t)+4, 100*t)
	}
	for fi, fam := range families {
		x0 := left + fi*group + 12
		for si, s := range settings {
			f, ok := fig[s+"\x00"+fam]
			if !ok {
				continue
			}
			x := x0 + si*bar
			fmt.Fprintf(&b, `<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="%s" fill-opacity="0.35"><title>%s, %s: moved %.1f%%</title></rect>`,
				x, y(f.Moved), bar-2, float64(h)-y(f.Moved), colour(si), template.HTMLEscapeString(s), fam, 100*f.Moved)
			fmt.Fprintf(&b, `<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="%s"><title>%s, %s: moved and acted on %.1f%%</title></rect>`,
				x, y(f.MovedAnswered), bar-2, float64(h)-y(f.MovedAnswered), colour(si), template.HTMLEscapeString(s), fam, 100*f.MovedAnswered)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`, x0+len(settings)*bar/2, h+16, fam)
	}
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#c00" stroke-dasharray="4 3"/><text x="%d" y="%.1f" fill="#c00">5%%</text>`,
		left, w-10, y(0.05), y(0.05), w-40, y(0.05)-3)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">moved rate by family (pale: moved; solid: acted on, not abstained)</text>`, w/2, h+34)
	for si, s := range settings {
		x, y := left+(si%4)*190, h+50+16*(si/4)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s</text>`, x, y-9, colour(si), x+14, y, template.HTMLEscapeString(s))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
