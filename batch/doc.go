// Package batch is gojev's job engine: it turns files of rows into files of decision records
// with a gojev.Decider, as jev decide does. It is to package gojev what sqlitex is to sqlite.
//
//   - Run streams rows through a Decider with a read-ahead window and writes one record a
//     line (Record, ErrorRecord; RecordLine), in input order, whole lines only.
//   - Job runs one file as jev decide runs it: the run it resumes checked, the output emptied
//     only once the model is ready, PriDe's prior read or estimated (PriorFile, PriorOnly),
//     the run file written before and after.
//   - OpenResume continues an interrupted (even kill -9ed) results file; Config.Skip is its
//     Resume.Skip.
//   - Shard splits a file among processes (Slurm array tasks, Kubernetes Indexed Jobs:
//     ParseShard), and Merge and MergeFile join their parts, checked (Problem).
//   - RunFile is the file beside every results file (RunFilePath): the model, contract, flags,
//     prior and times; ReadEntries reads a results file back.
//   - ApplyProfile calibrates a results file without decoding (jev calibrate --apply).
//
// Files written by jev and by a program through this package are the same files: either can
// resume or merge what the other wrote.
//
// Concurrency: Run decides up to Config.Window rows at once through the Decider (which is safe
// for concurrent use) and writes from one goroutine; the other functions are not meant to be
// called on one file from several goroutines. A results file is locked (flock) while it is
// written, so two processes cannot write one file.
//
// The package is pure Go: it builds without cgo, and over a Decider on any runtime.
package batch
