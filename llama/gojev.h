// Included by every cgo preamble of package llama, so that a build without the native
// libraries stops at the first file with one clear line instead of a wall of errors.
#ifndef GOJEV_LLAMA_H
#define GOJEV_LLAMA_H
#if !__has_include("llama.h")
#error gojev: the llama.cpp native libraries are not found. In a clone of gojev, run make. From your own Go module, run  eval "$(go run github.com/gojev/gojev/cmd/gojev-native install)"  before go build (see the README).
#endif
#include <stdlib.h>
#include "llama.h"
#endif
