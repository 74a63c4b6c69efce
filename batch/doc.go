// Package batch turns files of rows into files of decision records with a gojev.Decider: the
// helpers every program that decides a JSONL file needs, as jev decide uses them. It is to
// package gojev what sqlitex is to sqlite: Run streams rows through a Decider with a read-ahead
// window and writes one record a line, in input order; Resume continues an interrupted
// (even kill -9ed) results file; Shard splits a file among processes (Slurm array tasks,
// Kubernetes Indexed Jobs) and Merge joins their parts, checked; RunFile is the file beside
// every results file that records the model, contract and flags; Scanner is the one reader of
// results files; the PriDe helpers estimate a letter prior from a file's label-free sample.
// Job puts them together for one file as jev decide does (the run resumed and checked, the
// output emptied only once the model is ready, PriDe's prior read or estimated, the run file
// written before and after); MergeFile writes a merge to a file only when it adds up;
// CalibrateFile applies a calibration profile to a results file without decoding (jev
// calibrate --apply), and Render writes each row's prompt record without deciding (jev render).
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
