//go:build unix

package proxy

import "syscall"

// groupWord completes the messages of child.stop: each step reaches the
// server's process group.
const groupWord = " to its process group"

// signalGroup sends sig to every process of the server's group, which
// startProcess made with the server as its leader: a wrapper's children
// too.
func (c *child) signalGroup(sig syscall.Signal) {
	_ = syscall.Kill(-c.cmd.Process.Pid, sig)
}
