package main

import (
	"fmt"
	"io"

	"github.com/gojev/gojev/batch"
)

// report says on w what a resumed run kept of its file (nothing when the file was empty: a
// first run).
func reportResume(w io.Writer, path string, s *batch.Resume) {
	if s.Records == 0 && s.Dropped == 0 {
		return
	}
	fmt.Fprintf(w, "jev decide: resuming into %s: %s kept", path, plural(s.Records, "record"))
	if s.Dropped > 0 {
		fmt.Fprintf(w, ", a cut last line of %d bytes dropped", s.Dropped)
	}
	fmt.Fprintln(w)
}

// plural writes "1 record", "2 records".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
