package llamaserver

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill the server when the process that started it dies (a test
// binary that panics on -timeout runs no Cleanup, and its server would keep a core busy).
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
