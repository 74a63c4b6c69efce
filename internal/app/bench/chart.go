package bench

import (
	"fmt"
	"image/color"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// WriteSVG draws the report as an SVG of two bar charts side by side, with gonum/plot:
// decisions/s per path, and prompt tokens/s per path with the hardware's prompt-processing rate
// (llama-bench) as a horizontal line.
func (r *Report) WriteSVG(w io.Writer) error {
	var names []string
	var dps, tps plotter.Values
	for _, p := range []*Path{r.Engine, r.Packed, r.Sequential, r.HTTP} {
		if p == nil {
			continue
		}
		names = append(names, p.Name)
		dps = append(dps, p.DecisionsPerS)
		tps = append(tps, p.PromptTokensPerS)
	}
	if len(names) == 0 {
		return fmt.Errorf("bench: nothing to chart")
	}
	title := fmt.Sprintf("%s, %d rows, %d threads", r.Contract, r.Rows, r.Threads)
	left, err := bars("decisions/s — "+title, "decisions/s", names, dps, 0)
	if err != nil {
		return err
	}
	right, err := bars("prompt tokens/s (effective)", "tokens/s", names, tps, r.HardwarePromptTokensPerS)
	if err != nil {
		return err
	}
	const width, height = 12 * vg.Inch, 4.5 * vg.Inch
	canvas := vgsvg.New(width, height)
	dc := draw.New(canvas)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Inch / 4, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	left.Draw(tiles.At(dc, 0, 0))
	right.Draw(tiles.At(dc, 1, 0))
	_, err = canvas.WriteTo(w)
	return err
}

func bars(title, ylabel string, names []string, v plotter.Values, hline float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	b, err := plotter.NewBarChart(v, vg.Points(40))
	if err != nil {
		return nil, err
	}
	b.Color = color.RGBA{R: 66, G: 133, B: 244, A: 255}
	b.LineStyle.Width = 0
	p.Add(b)
	p.NominalX(names...)
	labels, err := plotter.NewLabels(plotter.XYLabels{XYs: xys(v), Labels: formatted(v)})
	if err == nil {
		p.Add(labels)
	}
	if hline > 0 {
		l, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: hline}, {X: float64(len(v)) - 0.5, Y: hline}})
		if err != nil {
			return nil, err
		}
		l.Color = color.RGBA{R: 219, G: 68, B: 55, A: 255}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("hardware (llama-bench) %.0f", hline), l)
		p.Legend.Top = true
	}
	p.Y.Min = 0
	return p, nil
}

func xys(v plotter.Values) plotter.XYs {
	out := make(plotter.XYs, len(v))
	for i, y := range v {
		out[i] = plotter.XY{X: float64(i), Y: y}
	}
	return out
}

func formatted(v plotter.Values) []string {
	out := make([]string, len(v))
	for i, y := range v {
		out[i] = fmt.Sprintf("%.3g", y)
	}
	return out
}
