//go:build !unix

package proxy

import (
	"os/exec"
	"syscall"
)

// groupWord completes the messages of child.stop: on Windows its steps
// reach the server's own process only.
const groupWord = ""

// startProcess starts cmd. Windows has no process groups to signal and no
// parent-death signal: the proxy ends the process it started and nothing
// that process started (a wrapper's server, such as the node that npx
// runs), and a proxy killed outright ends nothing. A job object would
// hold them; the proxy does not make one.
func startProcess(cmd *exec.Cmd) error {
	return cmd.Start()
}

// signalGroup ends the server's own process on SIGKILL; Windows has no
// SIGTERM to send, so that step only waits.
func (c *child) signalGroup(sig syscall.Signal) {
	if sig == syscall.SIGKILL {
		_ = c.cmd.Process.Kill()
	}
}

// groupAlive reports whether a process of the server's group still runs:
// the server is the only one the proxy knows of.
func (c *child) groupAlive() bool { return false }
