package proxy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// child is the MCP server process with the proxy's ends of its pipes.
type child struct {
	cmd    *exec.Cmd
	stdin  *os.File // write end
	stdout *os.File // read end
	stderr *os.File // read end; nil with InheritStderr

	exited   chan struct{} // closed when the process has been reaped
	state    *os.ProcessState
	waitErr  error
	stopOnce sync.Once
}

// startChild starts argv with pipes for its standard streams. Its stderr is
// the proxy's own descriptor errFile when errFile is non-nil.
func startChild(argv []string, errFile *os.File) (*child, error) {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, startError(argv[0], err)
	}
	c := &child{exited: make(chan struct{})}
	c.cmd = exec.Command(path, argv[1:]...)
	c.cmd.Args[0] = argv[0]

	var closeAfter []*os.File
	fail := func(err error) (*child, error) {
		for _, f := range closeAfter {
			f.Close()
		}
		for _, f := range []*os.File{c.stdin, c.stdout, c.stderr} {
			if f != nil {
				f.Close()
			}
		}
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return fail(fmt.Errorf("creating pipe: %w", err))
	}
	c.stdin, closeAfter = inW, append(closeAfter, inR)
	growPipe(inW)
	outR, outW, err := os.Pipe()
	if err != nil {
		return fail(fmt.Errorf("creating pipe: %w", err))
	}
	c.stdout, closeAfter = outR, append(closeAfter, outW)
	growPipe(outR)
	c.cmd.Stdin, c.cmd.Stdout = inR, outW
	if errFile != nil {
		c.cmd.Stderr = errFile
	} else {
		errR, errW, err := os.Pipe()
		if err != nil {
			return fail(fmt.Errorf("creating pipe: %w", err))
		}
		c.stderr, closeAfter = errR, append(closeAfter, errW)
		c.cmd.Stderr = errW
	}
	if err := startProcess(c.cmd); err != nil {
		return fail(startError(argv[0], err))
	}
	// The child holds its ends now; ours would keep its stdout open forever.
	for _, f := range closeAfter {
		f.Close()
	}
	go func() {
		c.waitErr = c.cmd.Wait()
		c.state = c.cmd.ProcessState
		close(c.exited)
	}()
	return c, nil
}

// startError words a failure to start the server for a person editing a
// host's configuration.
func startError(name string, err error) error {
	var hint string
	switch {
	case errors.Is(err, exec.ErrNotFound):
		hint = "the command was not found on PATH; check the command in your MCP host's configuration, or give an absolute path"
	case errors.Is(err, fs.ErrNotExist):
		hint = "no such file; check the path in your MCP host's configuration"
	case errors.Is(err, fs.ErrPermission):
		hint = "permission denied; make the file executable (chmod +x) or run it through its interpreter"
	case errors.Is(err, syscall.ENOEXEC):
		hint = "the file is not a program this system can run; add its interpreter before it (for example node or python3)"
	default:
		hint = err.Error()
	}
	return fmt.Errorf("cannot run %q: %s", name, hint)
}

// stop ends the server in steps, as MCP's stdio shutdown says: its stdin is
// already closed; wait grace, then SIGTERM, wait grace, then SIGKILL
// (docs/mcp-wire.md §2). It returns once the process has exited.
//
// On Unix each step reaches the server's whole process group (startProcess
// puts the server in one of its own), and the server has stopped only when
// no process of the group runs: hosts start most servers through a wrapper
// (npx -y …, uvx …, sh -c '…'), and a wrapper that exits on SIGTERM without
// passing it on leaves the real server running (issue 25, item 1). A
// process the server moved to a group or session of its own (setsid, a
// daemon) is out of reach; on Windows only the server's own process is
// ended (child_windows.go).
//
// stop runs its steps once: a second call returns at once.
func (c *child) stop(grace time.Duration, say func(string, ...any)) {
	c.stopOnce.Do(func() { c.stopSteps(grace, say) })
}

func (c *child) stopSteps(grace time.Duration, say func(string, ...any)) {
	if c.waitGroup(grace) {
		return
	}
	say("%s within %v of its stdin closing; sending SIGTERM%s", c.stillRunning(), grace, groupWord)
	c.signalGroup(syscall.SIGTERM)
	if c.waitGroup(grace) {
		return
	}
	say("%s within %v of SIGTERM; sending SIGKILL%s", c.stillRunning(), grace, groupWord)
	c.signalGroup(syscall.SIGKILL)
	<-c.exited
	if !c.waitGroup(drainGrace) {
		say("process group %d of the MCP server still runs after SIGKILL", c.cmd.Process.Pid)
	}
}

// stillRunning says what still runs: the server, or only processes it
// started.
func (c *child) stillRunning() string {
	select {
	case <-c.exited:
		return "the MCP server exited, but processes it started did not exit"
	default:
		return "the MCP server did not exit"
	}
}

// waitGroup waits at most d for the server to exit with every process of
// its group, and reports whether they have.
func (c *child) waitGroup(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-c.exited:
	case <-timer.C:
		return false
	}
	// The group's other processes are no children of the proxy, which can
	// neither wait for them nor learn of their end: it looks, more rarely
	// as time goes on.
	look := time.NewTimer(0)
	defer look.Stop()
	for every := time.Millisecond; ; every = min(2*every, 100*time.Millisecond) {
		select {
		case <-look.C:
		case <-timer.C:
			return !c.groupAlive()
		}
		if !c.groupAlive() {
			return true
		}
		look.Reset(every)
	}
}

// exitCode is the status the proxy passes on: the server's exit code, or
// 128+n when signal n ended it.
func (c *child) exitCode() int {
	if c.state == nil {
		return ExitProxy
	}
	if ws, ok := c.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return c.state.ExitCode()
}

// describeExit says how the server ended, for messages.
func (c *child) describeExit() string {
	if ws, ok := c.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("was killed by signal %d (%v)", int(ws.Signal()), ws.Signal())
	}
	return fmt.Sprintf("exited with code %d", c.state.ExitCode())
}

// errStopping refuses to start a server once the proxy is stopping.
var errStopping = errors.New("the proxy is stopping")

// children is every server a proxy started, so that it can kill whatever
// still runs before it exits: --listen ends its sessions in parallel, each
// in steps, and must not exit with one of their servers left behind.
type children struct {
	mu     sync.Mutex
	live   []*child
	closed bool
}

// start starts a server as startChild does, unless killAll has run.
func (g *children) start(argv []string, errFile *os.File) (*child, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, errStopping
	}
	c, err := startChild(argv, errFile)
	if err != nil {
		return nil, err
	}
	// Forget those already reaped, so that a long-lived proxy keeps only
	// its running servers here.
	live := g.live[:0]
	for _, o := range g.live {
		select {
		case <-o.exited:
		default:
			live = append(live, o)
		}
	}
	clear(g.live[len(live):])
	g.live = append(live, c)
	return c, nil
}

// killAll sends SIGKILL to every server still running (its process group,
// as stop does), saying so, and waits for them to be reaped, at most wait;
// it returns the pids of those that were not. No server starts after it.
func (g *children) killAll(wait time.Duration, say func(string, ...any)) []int {
	g.mu.Lock()
	g.closed = true
	live := g.live
	g.live = nil
	g.mu.Unlock()
	for _, c := range live {
		select {
		case <-c.exited:
			if c.groupAlive() {
				say("processes the MCP server (pid %d) started still run as the proxy stops; sending SIGKILL%s", c.cmd.Process.Pid, groupWord)
				c.signalGroup(syscall.SIGKILL)
			}
		default:
			say("the MCP server (pid %d) is still running as the proxy stops; sending SIGKILL%s", c.cmd.Process.Pid, groupWord)
			c.signalGroup(syscall.SIGKILL)
		}
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var left []int
	expired := false
	for _, c := range live {
		if !expired {
			select {
			case <-c.exited:
				continue
			case <-timer.C:
				expired = true
			}
		}
		// Whatever still runs now is stuck in the kernel; only say so.
		select {
		case <-c.exited:
		default:
			left = append(left, c.cmd.Process.Pid)
		}
	}
	return left
}
