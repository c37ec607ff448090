//go:build !linux

package proxy

import "os/exec"

// startProcess starts cmd. Only Linux can tie a child's life to its
// parent's, so elsewhere a proxy killed with SIGKILL leaves a server that
// ignores its stdin closing running.
func startProcess(cmd *exec.Cmd) error {
	return cmd.Start()
}
