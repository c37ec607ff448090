package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"time"
)

// rpcClient is a thin JSON-RPC client over a child's pipes: it writes one
// request line and reads one response line, with no framework in between,
// so that what it measures is the wire and whatever sits on it.
type rpcClient struct {
	name string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	buf  []byte
	id   int
}

func startClient(name string, argv []string) (*rpcClient, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	c := &rpcClient{name: name, cmd: cmd, in: in, out: bufio.NewReaderSize(out, 64<<10)}
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"proxybench","version":"0"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
	if _, err := io.WriteString(in, init); err != nil {
		return nil, fmt.Errorf("%s: initializing: %w", name, err)
	}
	// A server may send notifications before its answer (server-everything
	// announces its tools): the answer is the line that names the version.
	for {
		line, err := c.out.ReadSlice('\n')
		if err != nil {
			return nil, fmt.Errorf("%s: initializing: %q, %v", name, line, err)
		}
		if bytes.Contains(line, []byte(`"protocolVersion"`)) {
			return c, nil
		}
		if !bytes.Contains(line, []byte(`"method"`)) {
			return nil, fmt.Errorf("%s: initializing: %q", name, line)
		}
	}
}

// lookupParams are the params of the demo's lookup, the call of the round
// trips.
const lookupParams = `{"name":"lookup","arguments":{"text":"hello"}}`

// callWith makes one tools/call with params (JSON) and returns its round
// trip: from before the request is written until its response is read. The
// answer must be a result, error or not.
func (c *rpcClient) callWith(params string) (time.Duration, error) {
	c.id++
	c.buf = append(c.buf[:0], `{"jsonrpc":"2.0","id":`...)
	c.buf = strconv.AppendInt(c.buf, int64(c.id), 10)
	c.buf = append(c.buf, `,"method":"tools/call","params":`...)
	c.buf = append(c.buf, params...)
	c.buf = append(c.buf, "}\n"...)
	t0 := time.Now()
	if _, err := c.in.Write(c.buf); err != nil {
		return 0, fmt.Errorf("%s: writing call %d: %w", c.name, c.id, err)
	}
	line, err := c.out.ReadSlice('\n')
	d := time.Since(t0)
	if err != nil {
		return 0, fmt.Errorf("%s: reading answer %d: %w", c.name, c.id, err)
	}
	// The demo marshals with sorted keys: {"id":N,"jsonrpc":…,"result":…}.
	want := strconv.AppendInt([]byte(`{"id":`), int64(c.id), 10)
	if !bytes.HasPrefix(line, append(want, ',')) || !bytes.Contains(line, []byte(`"result"`)) {
		return 0, fmt.Errorf("%s: answer to call %d is %q", c.name, c.id, line)
	}
	return d, nil
}

// close closes the child's stdin, waits for it to exit, and returns the
// CPU time (user and system) it and its reaped children used.
func (c *rpcClient) close() (time.Duration, error) {
	c.in.Close()
	io.Copy(io.Discard, c.out)
	if err := c.cmd.Wait(); err != nil {
		return 0, fmt.Errorf("%s: %w", c.name, err)
	}
	return c.cmd.ProcessState.UserTime() + c.cmd.ProcessState.SystemTime(), nil
}

// latencies makes warmup+calls round trips through each of the commands,
// taking turns (one call to each, then the next round), so that whatever
// else runs on the machine weighs on all of them alike. It returns the
// round trips after warm-up, per command, and the CPU time each command
// (with its children) used per call, warm-up included.
func latencies(names []string, argvs [][]string, warmup, calls int) ([][]time.Duration, []time.Duration, error) {
	return latenciesOf(names, argvs, nil, lookupParams, warmup, calls)
}

// latenciesOf is latencies of the call params, after the calls setup made
// once through each command.
func latenciesOf(names []string, argvs [][]string, setup []string, params string, warmup, calls int) ([][]time.Duration, []time.Duration, error) {
	clients, stop, err := startClients(names, argvs)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range clients {
		for _, p := range setup {
			if _, err := c.callWith(p); err != nil {
				stop()
				return nil, nil, err
			}
		}
	}
	defer stop()
	out := make([][]time.Duration, len(argvs))
	for i := range out {
		out[i] = make([]time.Duration, 0, calls)
	}
	for n := 0; n < warmup+calls; n++ {
		for i, c := range clients {
			d, err := c.callWith(params)
			if err != nil {
				return nil, nil, err
			}
			if n >= warmup {
				out[i] = append(out[i], d)
			}
		}
	}
	cpu := make([]time.Duration, len(clients))
	for i, c := range clients {
		clients[i] = nil // closed here, not by stop
		t, err := c.close()
		if err != nil {
			return nil, nil, err
		}
		cpu[i] = t / time.Duration(warmup+calls)
	}
	return out, cpu, nil
}

// startClients starts a client of each command; stop closes those that are
// still open (a nil entry is skipped).
func startClients(names []string, argvs [][]string) (clients []*rpcClient, stop func(), err error) {
	clients = make([]*rpcClient, len(argvs))
	stop = func() {
		for _, c := range clients {
			if c != nil {
				c.close()
			}
		}
	}
	for i, argv := range argvs {
		if clients[i], err = startClient(names[i], argv); err != nil {
			stop()
			return nil, nil, err
		}
	}
	return clients, stop, nil
}
