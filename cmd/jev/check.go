package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/llama"
)

const checkSynopsis = `Usage: jev check [-m MODEL.gguf] [flags]

Runs the start-up checks a model must pass before it is scored: the sixteen answer slots
A..P are single, distinct tokens that decode back to "ABCDEFGHIJKLMNOP", and appending a
letter to a rendered sample prompt never changes the prompt's tokens (the boundary check).
Prints the slots (token ids and pieces), the chat template's SHA-256 and the boundary result,
and, in-process, the backend plugins loaded (--plugin, $GOJEV_PLUGINS), the compute devices
llama.cpp found and which of them decides.
Exits 1, saying why, when the model fails.`

func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	var mf modelFlags
	mf.register(fs)
	if err := parseFlags(fs, args, stderr, checkSynopsis); err != nil {
		return err
	}
	d, err := mf.open(ctx, stderr, gojev.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	c := d.Check()
	if ip, ok := d.Runtime().(*backend.InProcess); ok {
		m := ip.Model()
		desc, _ := m.Desc()
		fmt.Fprintf(stdout, "model            %s (%s, n_vocab %d)\n", m.Path(), desc, m.Vocab().NVocab())
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
		fmt.Fprintf(stdout, "decides on       %s\n", decidingDevice(devs, mf.nGPULayers, len(loaded)))
		fmt.Fprintf(stdout, "decode           %s (%s)\n", c.Decode, map[bool]string{
			true:  "up to " + strconv.Itoa(ip.PackSeqs()) + " prompts per llama_decode; jev decide --decode one-sequence for exact logits",
			false: "one prompt per llama_decode, exact; jev decide --decode packed packs them"}[c.Decode == backend.DecodePacked])
	}
	fmt.Fprintf(stdout, "backend          %s, renderer %s, template_date %s\n", c.Backend, c.Renderer, c.TemplateDate)
	fmt.Fprintf(stdout, "prompt_version   %s\n", c.PromptVersion)
	if c.TemplateSHA256 != "" {
		fmt.Fprintf(stdout, "template_sha256  %s\n", c.TemplateSHA256)
	}
	fmt.Fprintf(stdout, "answer slots     ")
	for i, s := range c.Slots {
		if i > 0 {
			fmt.Fprint(stdout, " ")
		}
		fmt.Fprintf(stdout, "%s=%d:%s", s.Letter, s.Token, strconv.Quote(s.Piece))
	}
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "slots            ok: 16 single tokens, distinct, decode to %q\n", contract.Letters)
	fmt.Fprintf(stdout, "boundary         ok on the sample prompt (%d tokens, sha256 %s)\n", c.SampleTokens, c.SamplePromptSHA256)
	return nil
}

// decidingDevice says which devices decide with n_gpu_layers (-1: all layers): the GPUs when
// a GPU backend is there and layers are offloaded, else the CPU. plugins is how many backend
// plugins were loaded.
func decidingDevice(devs []llama.Device, nGPULayers, plugins int) string {
	gpus := gpuNames(devs)
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

// decidingDevices names the devices that decide with n_gpu_layers: the GPUs that take layers,
// and the CPU unless every layer is offloaded.
func decidingDevices(devs []llama.Device, nGPULayers int) []string {
	var out []string
	if nGPULayers != 0 {
		out = gpuNames(devs)
	}
	if len(out) == 0 || nGPULayers > 0 {
		out = append(out, "CPU")
	}
	return out
}

// gpuNames names the devices layers can be offloaded to (Device.GPU), in ggml's order.
func gpuNames(devs []llama.Device) []string {
	var out []string
	for _, d := range devs {
		if d.GPU() {
			out = append(out, d.Name)
		}
	}
	return out
}

// gib writes a byte count in GiB.
func gib(n uint64) string { return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30)) }
