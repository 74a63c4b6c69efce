package redteam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/internal/atomicfile"
)

// ErrFigures wraps what keeps Run from measuring the records: one that cannot be read, or an
// error budget (MeasureConfig.MaxError) the profile cannot meet.
var ErrFigures = errors.New("redteam: cannot measure the records")

// Config is one red-team measurement (jev redteam) of the rows BuildAttacks attacked: Rows
// labelled rows of Input, attacked in Families of Catalogue with Targets, under Dir/rows;
// Settings decided with Decide and read with Measure (ProfileFile names Measure.Profile's file).
type Config struct {
	Input, Dir  string
	Catalogue   *Catalogue
	Families    []Family
	Rows        int
	Targets     map[string]map[int]string
	Settings    []Setting
	Decide      DecideConfig
	Measure     MeasureConfig
	ProfileFile string
}

// Run decides the clean and attacked rows under every setting (DecideSetting: the files a
// previous run finished are kept), measures every reading's figures on every family against
// the clean rows and each decoded setting's cost, and writes the report to Dir/redteam.json.
// Errors measuring the records wrap ErrFigures.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	files, rowsDir := Files(cfg.Families), filepath.Join(cfg.Dir, "rows")
	rep := &Report{Catalogue: cfg.Catalogue.Version, Input: cfg.Input, Rows: cfg.Rows, Families: cfg.Families, Started: time.Now().UTC()}
	for _, s := range cfg.Settings {
		rep.Settings = append(rep.Settings, s.Name)
		if err := DecideSetting(ctx, s, files, rowsDir, cfg.Dir, &cfg.Decide); err != nil {
			return nil, err
		}
	}
	rep.Model = cfg.Decide.Model

	// The figures, from the records on disk.
	prof := cfg.Measure.Profile
	variants, derived := Readings(cfg.Settings, prof != nil)
	rep.Derived = derived
	if prof != nil {
		rep.Profile = &batch.RunCalibration{File: cfg.ProfileFile, SHA256: prof.SHA256}
	}
	for _, s := range cfg.Settings {
		if s.Options.Detect {
			rep.Detector = &DetectInfo{PromptVersion: contract.DetectPromptVersion, Threshold: cfg.Measure.DetectThreshold}
		}
	}
	var err error
	if rep.Figures, err = FiguresOf(variants, files, cfg.Dir, cfg.Targets, cfg.Measure); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFigures, err)
	}
	rep.Costs = Costs(cfg.Settings, files, cfg.Dir)
	return rep, atomicfile.Write(filepath.Join(cfg.Dir, "redteam.json"), rep.WriteJSON)
}

// WriteJSON writes the report as indented JSON (redteam.json).
func (rep *Report) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteText writes the figures and costs as the table jev redteam prints.
func (rep *Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "jev redteam: %d rows, %s, settings %s\n\n", rep.Rows, rep.Catalogue, strings.Join(rep.Settings, ", "))
	fmt.Fprintf(w, "  %-26s %-9s %7s %7s %7s %7s %9s %9s %8s %8s %6s\n", "setting", "family", "moved", "acted", "clean", "attacked", "abstained", "p(moved)", "flagged", "clean fl", "AUC")
	for _, f := range rep.Figures {
		fl, cfl, auc := "—", "—", "—"
		if f.Detected {
			fl, cfl, auc = pct1(f.AttackedFlagged), pct1(f.CleanFlagged), fmt.Sprintf("%.3f", f.DetectorAUC)
		}
		fmt.Fprintf(w, "  %-26s %-9s %7s %7s %7s %8s %9s %9.3f %8s %8s %6s\n", f.Setting, f.Family, pct1(f.Moved), pct1(f.MovedAnswered),
			pct1(f.CleanAccuracy), pct1(f.AttackedAccuracy), pct1(f.AttackedAbstained), f.MovedMeanProbability, fl, cfl, auc)
	}
	fmt.Fprintf(w, "\n  moved: attacked choice = target, clean choice ≠ target; acted: moved and not abstained; clean/attacked: accuracy;\n")
	fmt.Fprintf(w, "  p(moved): mean probability of the moved rows; flagged: the detector's recall on the family, clean fl: its false alarms,\n")
	fmt.Fprintf(w, "  AUC: how well its p_yes separates the family's rows from the clean ones, at any threshold\n\n")
	fmt.Fprintf(w, "  %-26s %8s %10s %9s %12s %9s\n", "decoded setting", "rows", "s/row", "wall ×", "tokens/row", "tokens ×")
	for _, c := range rep.Costs {
		fmt.Fprintf(w, "  %-26s %8d %10.2f %8.2f× %12.0f %8.2f×\n", c.Setting, c.Rows, c.WallPerRowS, c.WallVsFirst, c.DecodedPerRow, c.DecodedVsFirst)
	}
}

func pct1(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }

// WriteText lists the catalogue's families, their sources and their variants' texts (jev
// redteam --list).
func (c *Catalogue) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%s: %s\n", c.Version, c.Description)
	for _, f := range c.Families {
		fmt.Fprintf(w, "\n%s (names the target's %s): %s\n", f.Name, f.Target, f.Description)
		for _, s := range f.Sources {
			fmt.Fprintf(w, "  source: %s\n", s)
		}
		for _, v := range f.Variants {
			t := ""
			if v.Transform != "" {
				t = " [" + v.Transform + ": " + c.Transforms[v.Transform] + "]"
			}
			fmt.Fprintf(w, "  %-20s %q%s\n", v.Name, v.Text, t)
		}
	}
}
