package llama

// The native libraries come from `make native` (third_party/build-native.sh), which points
// third_party/native at a cached static build of the pinned llama.cpp. The link flags for each
// backend live in link_*.go.

/*
#cgo CFLAGS: -I${SRCDIR}/../third_party/native/include -O2
#include "gojev.h"
*/
import "C"
