//go:build unix && !linux

package proxy

import (
	"errors"
	"os/exec"
	"syscall"
)

// startProcess starts cmd as the leader of a process group of its own, so
// that child.stop's signals reach what it starts (a wrapper's server).
// Only Linux can tie a child's life to its parent's, so elsewhere a proxy
// killed with SIGKILL leaves a server that ignores its stdin closing
// running.
func startProcess(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd.Start()
}

// groupAlive reports whether a process of the server's group exists. One
// that has exited and waits to be reaped counts: only Linux's /proc tells
// it apart cheaply, and init reaps orphans promptly.
func (c *child) groupAlive() bool {
	return !errors.Is(syscall.Kill(-c.cmd.Process.Pid, 0), syscall.ESRCH)
}
