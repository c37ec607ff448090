package proxy

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
)

// A server must not outlive the proxy, even one killed with SIGKILL, which
// it cannot handle: the server would run on with init as its parent (its
// stdin closes, but not every server exits on that). Linux can signal a
// child when its parent dies (prctl PR_SET_PDEATHSIG, set by
// SysProcAttr.Pdeathsig), and the signal is SIGKILL: once the proxy is dead
// nobody is left to follow a SIGTERM the server ignores with a SIGKILL, and
// the orderly steps (stdin closed, SIGTERM, SIGKILL) are the proxy's own
// whenever it is alive to take them.
//
// The signal reaches only the process the proxy started: a wrapper (npx,
// sh -c) dies, and the server it started sees its stdin close, as the
// proxy is gone. A proxy alive to take its steps signals the server's whole
// process group instead (child.stop).
//
// "Parent" here is the thread that started the child, not the process: a
// child started from a thread that later exits is killed then, with the
// proxy alive. Go ends threads (a goroutine that exits while locked to its
// thread takes the thread with it), so every child is started from one
// goroutine locked to its thread for the life of the process.
var (
	spawnOnce sync.Once
	spawns    chan spawn
)

// spawn asks the spawner to start cmd and to report on done.
type spawn struct {
	cmd  *exec.Cmd
	done chan error
}

// startProcess starts cmd, which is to die with the proxy.
func startProcess(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawns = make(chan spawn)
		go spawner()
	})
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	s := spawn{cmd: cmd, done: make(chan error, 1)}
	spawns <- s
	return <-s.done
}

// spawner starts every child from its own thread, which it never gives
// back: it runs, locked, for as long as the process does.
func spawner() {
	runtime.LockOSThread()
	for s := range spawns {
		s.done <- s.cmd.Start()
	}
}

// groupAlive reports whether a process of the server's group still runs.
// A process that has exited and waits to be reaped does not: its parent may
// be the proxy itself, when it runs as a container's first process and
// inherits the orphans, and the proxy reaps only the server.
func (c *child) groupAlive() bool {
	pgid := c.cmd.Process.Pid
	if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
		return false
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, p := range procs {
		if p.Name()[0] < '0' || p.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + p.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 3 || f[0][0] == 'Z' || f[0][0] == 'X' {
			continue
		}
		if g, err := strconv.Atoi(string(f[2])); err == nil && g == pgid {
			return true
		}
	}
	return false
}
