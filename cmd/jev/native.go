//go:build cgo

package main

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/internal/cli"
	"github.com/gojev/gojev/llama"
)

// The in-process parts of jev: what needs llama.cpp linked through cgo. native_nocgo.go has
// their stand-ins for a build without cgo, where jev decides over --runtime only.

// setNativeLogger sends llama.cpp's log (and its plugins') to logger.
func setNativeLogger(logger *slog.Logger) { llama.SetLogger(logger) }

// printInProcess prints jev check's in-process lines: the model, plugins, devices, which
// device decides and the decode mode (nothing over --runtime).
func printInProcess(stdout io.Writer, d *gojev.Decider, nGPULayers int) {
	c := d.Check()
	if ip, ok := d.Runtime().(*backend.InProcess); ok {
		m := ip.ModelInfo()
		fmt.Fprintf(stdout, "model            %s (%s, n_vocab %d)\n", m.Path, m.Desc, m.NVocab)
		loaded := llama.LoadedBackends()
		for _, p := range slices.Sorted(maps.Keys(loaded)) {
			fmt.Fprintf(stdout, "plugin           %s (%s backend)\n", p, loaded[p])
		}
		devs := llama.Devices()
		for i, d := range devs {
			label := "devices"
			if i > 0 {
				label = ""
			}
			fmt.Fprintf(stdout, "%-16s %s  %s (%s), %s backend, %s memory\n", label, d.Name, d.Description, d.Type, d.Backend, gib(d.TotalBytes))
		}
		fmt.Fprintf(stdout, "decides on       %s\n", decidingDevice(devs, nGPULayers, len(loaded)))
		fmt.Fprintf(stdout, "decode           %s (%s)\n", c.Decode, map[bool]string{
			true:  "up to " + strconv.Itoa(ip.PackSeqs()) + " prompts per llama_decode; jev decide --decode one-sequence for exact logits",
			false: "one prompt per llama_decode, exact; jev decide --decode packed packs them"}[c.Decode == backend.DecodePacked])
	}
}

// decidingDevice says which devices decide with n_gpu_layers (-1: all layers): the GPUs when
// a GPU backend is there and layers are offloaded, else the CPU. plugins is how many backend
// plugins were loaded.
func decidingDevice(devs []llama.Device, nGPULayers, plugins int) string {
	gpus := llama.GPUNames(devs)
	switch {
	case len(gpus) == 0 && plugins > 0:
		return "CPU (the plugin loaded but found no GPU device: see the warning above)"
	case len(gpus) == 0:
		return "CPU (no GPU device: --plugin loads a GPU backend, which gojev-native install --gpu cuda|vulkan|metal fetches)"
	case nGPULayers == 0:
		return "CPU (-ngl 0: no layer offloaded to " + strings.Join(gpus, ", ") + ")"
	case nGPULayers < 0:
		return strings.Join(gpus, ", ") + " (-ngl -1: every layer offloaded)"
	}
	return fmt.Sprintf("%s and the CPU (-ngl %d: that many layers offloaded, the rest on the CPU)", strings.Join(gpus, ", "), nGPULayers)
}

// gib writes a byte count in GiB.
func gib(n uint64) string { return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30)) }

// quantize is jev quantize's work (llama.Quantize).
func quantize(in, out, typ string, threads int) error {
	if !slices.Contains(llama.QuantTypes, strings.ToLower(typ)) {
		return cli.Usage(fmt.Errorf("--type %q: want one of %s", typ, strings.Join(llama.QuantTypes, ", ")))
	}
	return llama.Quantize(in, out, typ, threads)
}
