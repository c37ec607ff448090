package procedure

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/jsontext"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// ProtocolVersion is the MCP revision hoist-procedure asks for.
const ProtocolVersion = "2025-06-18"

// Client is a minimal MCP client over a server's stdio: initialize, tools/list
// and tools/call, with requests numbered 1, 2, … so that its sessions are
// the same from run to run. One goroutine reads the server's stdout; writes
// are serialized, so calls may be made concurrently (the calls of one LLM
// turn are sent together).
type Client struct {
	in  io.WriteCloser
	out io.ReadCloser
	cmd *exec.Cmd

	wmu    sync.Mutex // serializes writes to in
	mu     sync.Mutex
	nextID int
	wait   map[string]chan response
	err    error // why the reader stopped
	done   chan struct{}
	closed bool
}

// response is a response's result, or its error (raw), as sent.
type response struct {
	Result json.RawMessage
	Error  json.RawMessage
}

// Start starts the server command with its stdin and stdout as the MCP
// stream and its stderr on stderr.
func Start(command []string, stderr io.Writer, env []string) (*Client, error) {
	if len(command) == 0 {
		return nil, errors.New("no server command")
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stderr = stderr
	cmd.Env = env
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the server: %w", err)
	}
	c := newClient(in, out)
	c.cmd = cmd
	return c, nil
}

func newClient(in io.WriteCloser, out io.ReadCloser) *Client {
	c := &Client{in: in, out: out, nextID: 1, wait: map[string]chan response{}, done: make(chan struct{})}
	go c.read()
	return c
}

// read dispatches the server's lines until its stdout ends: responses to
// their callers; a ping is answered, other requests refused; notifications
// and lines that are not JSON-RPC are ignored.
func (c *Client) read() {
	br := bufio.NewReaderSize(c.out, 64<<10)
	var err error
	for {
		var line []byte
		line, err = br.ReadBytes('\n')
		if len(line) > 0 {
			c.dispatch(line)
		}
		if err != nil {
			break
		}
	}
	if err == io.EOF {
		err = errors.New("the server closed its stdout")
	}
	c.mu.Lock()
	c.err = err
	for id, ch := range c.wait {
		close(ch)
		delete(c.wait, id)
	}
	c.mu.Unlock()
	close(c.done)
}

func (c *Client) dispatch(line []byte) {
	m := jsonrpc.Classify(line)
	switch m.Kind {
	case jsonrpc.Response:
		r := response{Result: bytes.Clone(m.Result), Error: bytes.Clone(m.Error)}
		c.mu.Lock()
		ch := c.wait[string(m.ID)]
		delete(c.wait, string(m.ID))
		c.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	case jsonrpc.Request:
		if m.Method == "ping" {
			c.write(append(append([]byte(`{"jsonrpc":"2.0","id":`), m.ID...), `,"result":{}}`...))
			return
		}
		c.write(mcpmsg.AppendError(nil, m.ID, -32601, "hoist-procedure does not answer "+m.Method))
	}
}

func (c *Client) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.in.Write(append(b, '\n'))
	return err
}

// notify sends a notification.
func (c *Client) notify(method string) error {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method})
	return c.write(b)
}

// send writes a request and returns the channel its response arrives on
// (closed when the server's stdout ends first).
func (c *Client) send(method string, params any) (<-chan response, error) {
	line, ch, err := c.request1(method, params)
	if err != nil {
		return nil, err
	}
	if err := c.write(line); err != nil {
		return nil, fmt.Errorf("%s: the server stopped reading its stdin: %w", method, err)
	}
	return ch, nil
}

// request1 numbers a request and returns its line and the channel its
// response will arrive on.
func (c *Client) request1(method string, params any) ([]byte, <-chan response, error) {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, nil, fmt.Errorf("%s: %w", method, err)
	}
	id := c.nextID
	c.nextID++
	ch := make(chan response, 1)
	c.wait[strconv.Itoa(id)] = ch
	c.mu.Unlock()
	msg := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return nil, nil, err
	}
	return b, ch, nil
}

// await waits for a response.
func (c *Client) await(ctx context.Context, method string, ch <-chan response, timeout time.Duration) (json.RawMessage, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r, ok := <-ch:
		if !ok {
			c.mu.Lock()
			err := c.err
			c.mu.Unlock()
			return nil, fmt.Errorf("%s: no answer: %v", method, err)
		}
		if r.Error != nil {
			code, _ := jsontext.Lookup(r.Error, "code")
			return nil, fmt.Errorf("%s: the server answered error %s: %s", method, code, mcpmsg.ResultOf(jsonrpc.Message{Error: r.Error}).Text())
		}
		if r.Result == nil {
			return nil, fmt.Errorf("%s: the answer has no result", method)
		}
		return r.Result, nil
	case <-t.C:
		return nil, fmt.Errorf("%s: no answer within %v", method, timeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// request sends a request and waits for its result.
func (c *Client) request(ctx context.Context, method string, params any, timeout time.Duration) (json.RawMessage, error) {
	ch, err := c.send(method, params)
	if err != nil {
		return nil, err
	}
	return c.await(ctx, method, ch, timeout)
}

// ServerInfo is what the server said of itself in its initialize result.
type ServerInfo struct {
	Name            string `json:"name"`
	Version         string `json:"version"`
	ProtocolVersion string `json:"protocol_version"`
}

// Initialize runs the MCP handshake: initialize, then
// notifications/initialized.
func (c *Client) Initialize(ctx context.Context, timeout time.Duration) (ServerInfo, error) {
	raw, err := c.request(ctx, "initialize", map[string]any{
		"protocolVersion": ProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "hoist-procedure", "version": "1"},
	}, timeout)
	if err != nil {
		return ServerInfo{}, err
	}
	in := mcpmsg.ReadInitialized(raw)
	info := ServerInfo{Name: in.ServerName, ProtocolVersion: in.ProtocolVersion}
	if v, ok := jsontext.Lookup(in.ServerInfo, "version"); ok && v[0] == '"' {
		info.Version = jsontext.Unquote(v)
	}
	return info, c.notify("notifications/initialized")
}

// Tool is a tool the server lists.
type Tool struct {
	Name string
	// ReadOnly is the tool's readOnlyHint; Hinted whether it gives one (a
	// tool without, such as a calculator, is neither a read nor a write).
	ReadOnly bool
	Hinted   bool
	// InputSchema is the tool's listed input schema, raw.
	InputSchema json.RawMessage
}

// ListTools lists the server's tools, following nextCursor.
func (c *Client) ListTools(ctx context.Context, timeout time.Duration) ([]Tool, error) {
	var tools []Tool
	var cursor string
	for page := 0; page < 100; page++ {
		var params any
		if cursor != "" {
			params = map[string]any{"cursor": cursor}
		}
		raw, err := c.request(ctx, "tools/list", params, timeout)
		if err != nil {
			return nil, err
		}
		listed, next := mcpmsg.ReadTools(raw)
		for _, t := range listed {
			ro, hinted := t.ReadOnly()
			tools = append(tools, Tool{Name: t.Name, ReadOnly: ro, Hinted: hinted, InputSchema: bytes.Clone(t.InputSchema)})
		}
		if next == "" {
			return tools, nil
		}
		cursor = next
	}
	return nil, errors.New("tools/list: more than 100 pages")
}

// CallResult is a tools/call result: its text items in order and isError.
type CallResult struct {
	Texts   []string
	IsError bool
}

// CallTool sends a tools/call and returns a function that waits for its
// result, so that a turn's calls go out together.
func (c *Client) CallTool(tool string, args json.RawMessage) (func(ctx context.Context, timeout time.Duration) (CallResult, error), error) {
	ch, err := c.send("tools/call", map[string]any{"name": tool, "arguments": args})
	if err != nil {
		return nil, err
	}
	return c.waitResult(tool, ch), nil
}

// waitResult returns the wait for a tools/call's result on ch.
func (c *Client) waitResult(tool string, ch <-chan response) func(context.Context, time.Duration) (CallResult, error) {
	return func(ctx context.Context, timeout time.Duration) (CallResult, error) {
		raw, err := c.await(ctx, "tools/call "+tool, ch, timeout)
		if err != nil {
			return CallResult{}, err
		}
		r := mcpmsg.ReadResult(raw)
		return CallResult{Texts: r.Texts, IsError: r.IsError}, nil
	}
}

// ToolCall is one call of CallTools.
type ToolCall struct {
	Tool string
	Args json.RawMessage
}

// CallTools sends several tools/calls in one write, as a host sends the
// parallel calls of one LLM turn, and returns a wait for each: a proxy in
// front of the server then reads them together, and knows every call of
// the turn as asked before the first answer comes back (hoist-mcp manual,
// "Calls still on their way").
func (c *Client) CallTools(calls []ToolCall) ([]func(ctx context.Context, timeout time.Duration) (CallResult, error), error) {
	var buf []byte
	waits := make([]func(context.Context, time.Duration) (CallResult, error), len(calls))
	for i, tc := range calls {
		line, ch, err := c.request1("tools/call", map[string]any{"name": tc.Tool, "arguments": tc.Args})
		if err != nil {
			return nil, err
		}
		buf = append(append(buf, line...), '\n')
		waits[i] = c.waitResult(tc.Tool, ch)
	}
	c.wmu.Lock()
	_, err := c.in.Write(buf)
	c.wmu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("tools/call: the server stopped reading its stdin: %w", err)
	}
	return waits, nil
}

// Close ends the session the way MCP's stdio transport says: it closes the
// server's stdin and waits for it to exit, then sends SIGTERM after grace,
// then SIGKILL after grace again. It returns the server's exit error, if
// any. Close is idempotent.
func (c *Client) Close(grace time.Duration) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	err := c.in.Close()
	if c.cmd == nil {
		<-c.done
		return err
	}
	// The reader must see the end of stdout before Wait closes the pipe.
	exited := make(chan error, 1)
	go func() {
		<-c.done
		exited <- c.cmd.Wait()
	}()
	select {
	case err := <-exited:
		if err != nil {
			return fmt.Errorf("the server: %w", err)
		}
		return nil
	case <-time.After(grace):
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		return fmt.Errorf("the server did not exit within %v of its stdin closing; stopped with SIGTERM: %w", grace, err)
	case <-time.After(grace):
	}
	c.cmd.Process.Kill()
	return fmt.Errorf("the server did not exit after SIGTERM; killed: %w", <-exited)
}
