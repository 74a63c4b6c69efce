//go:build !linux

package llamaserver

import "os/exec"

// dieWithParent: only Linux has a parent-death signal; elsewhere Close stops the server.
func dieWithParent(*exec.Cmd) {}
