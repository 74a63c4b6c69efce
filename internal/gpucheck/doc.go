// Package gpucheck holds the tests that load a GPU backend plugin into the test process: the
// Vulkan plugin on lavapipe (Mesa's software Vulkan device), decided against the CPU. They live
// in a package of their own because a loaded plugin's devices stay registered for the rest of
// the process, and every later model load would offload to them.
package gpucheck
