package debias

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/gofrs/flock"

	"github.com/gojev/gojev/internal/cache"
)

// Store is where PriDe priors are kept between runs, so that a run pays for estimating a
// model's prior once per contract and option count: the folder Dir holds one prior file per
// model and contract, Dir/<model sha256>/<prompt_version>.json, whose option counts grow as
// runs estimate new ones (Add). Beneath the folder lie the priors gojev ships for the models
// it knows (Shipped); the folder's override them option count by option count. A zero Store
// (no Dir) reads the shipped priors only and keeps nothing.
type Store struct {
	Dir string
}

// Load returns the stored prior for a model (by sha256) and contract: the shipped one, with
// the folder's option counts over it; nil when neither has one. A folder file that cannot be
// read is an error wrapping ErrPriorFile (the shipped prior is still returned with it).
func (s Store) Load(model ModelID, promptVersion string) (*Prior, error) {
	if model.SHA256 == "" {
		return nil, nil
	}
	out := Shipped(model.SHA256, promptVersion)
	kept, err := s.Kept(model, promptVersion)
	if kept == nil {
		return out, err
	}
	if out == nil {
		return kept, nil
	}
	for k, lp := range kept.ByOptions {
		out.ByOptions[k] = lp
	}
	return out, nil
}

// Kept is the prior the folder keeps for a model and contract (what runs estimated), without
// the shipped one; nil when it keeps none. Errors wrap ErrPriorFile.
func (s Store) Kept(model ModelID, promptVersion string) (*Prior, error) {
	path, ok := s.path(model.SHA256, promptVersion)
	if !ok {
		return nil, nil
	}
	p, err := LoadPrior(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	}
	if err := p.Check(model, promptVersion); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrPriorFile, path, err)
	}
	return p, nil
}

// Path is the file the folder keeps a model's prior for a contract in ("" for a zero Store).
func (s Store) Path(model ModelID, promptVersion string) string {
	p, _ := s.path(model.SHA256, promptVersion)
	return p
}

// Add keeps p's option counts in the folder, over those it held for the same model and
// contract. It does nothing for a zero Store or a prior without a model sha256.
//
// Concurrent Adds from several goroutines or processes (two jev runs sharing the cache
// folder) for the same model and contract each keep their option counts: Add reads, merges
// and writes the prior file holding an exclusive lock on a lock file beside it, <file>.lock,
// and waits for it while another Add holds it. The lock is advisory (flock(2) on Unix,
// LockFileEx on Windows, as github.com/gofrs/flock takes it): it orders Adds, not other
// writers of the file, and Load and Kept take none (the file is replaced atomically, so they
// read the old prior or the new one whole). The kernel releases it when its holder's file is
// closed or its process dies, so a crashed run leaves no stale lock to wait on forever; the
// lock file itself stays, empty (removing it would let two Adds lock two different files).
func (s Store) Add(p *Prior) error {
	path, ok := s.path(p.Model.SHA256, p.PromptVersion)
	if !ok {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	lock := flock.New(path+".lock", flock.SetPermissions(0o644))
	if err := lock.Lock(); err != nil {
		return fmt.Errorf("debias: locking %s: %w", lock.Path(), err)
	}
	defer lock.Unlock()
	merged := clonePrior(p)
	if old, err := LoadPrior(path); err == nil && old.Check(p.Model, p.PromptVersion) == nil {
		for k, lp := range old.ByOptions {
			if _, ok := merged.ByOptions[k]; !ok {
				merged.ByOptions[k] = lp
			}
		}
	}
	return merged.Save(path)
}

var safeName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

func (s Store) path(sha, promptVersion string) (string, bool) {
	if s.Dir == "" || !safeName.MatchString(sha) || !safeName.MatchString(promptVersion) {
		return "", false
	}
	return filepath.Join(s.Dir, sha, promptVersion+".json"), true
}

func clonePrior(p *Prior) *Prior {
	if p == nil {
		return nil
	}
	c := *p
	c.ByOptions = make(map[int]LetterPrior, len(p.ByOptions))
	for k, lp := range p.ByOptions {
		c.ByOptions[k] = lp
	}
	return &c
}

//go:embed shipped/*.json
var shippedFiles embed.FS

var shipped = sync.OnceValue(func() []*Prior {
	var out []*Prior
	names, _ := fs.Glob(shippedFiles, "shipped/*.json")
	for _, n := range names {
		f, err := shippedFiles.Open(n)
		if err != nil {
			panic(err) // embedded: cannot fail
		}
		p, err := ReadPrior(f)
		f.Close()
		if err != nil {
			panic(fmt.Sprintf("debias: shipped prior %s: %v", n, err)) // TestShippedPriors reads them all
		}
		out = append(out, p)
	}
	return out
})

// Shipped returns the prior gojev ships for a model (by file sha256) and contract, nil when
// it ships none. The shipped priors (debias/shipped/) are estimated with PriDe's own method
// on public labelled rows without reading their labels; each names its rows in Source.
func Shipped(sha256, promptVersion string) *Prior {
	for _, p := range shipped() {
		if p.Model.SHA256 == sha256 && p.PromptVersion == promptVersion {
			return clonePrior(p)
		}
	}
	return nil
}

// DefaultStore is the Store jev and Open read and add to: the folder $GOJEV_PRIORS, else
// priors/ under gojev's cache folder ($GOJEV_CACHE, else ~/.cache/gojev). With no home
// folder it keeps nothing (the shipped priors only).
func DefaultStore() Store {
	d, err := cache.Priors()
	if err != nil {
		return Store{}
	}
	return Store{Dir: d}
}
