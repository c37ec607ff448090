package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hoist-mcp/hoist/flow"
	"github.com/spf13/cobra"
)

type initOptions struct {
	f         *Factory
	listen    string
	record    string
	domain    string
	name      string
	tokenFile string
	json      bool
	command   []string
	// flowFile is --flow; serverName the server the flow serves
	// (--server-name, or the flow's one server).
	flowFile   string
	serverName string
}

func newCmdInit(f *Factory, runF func(context.Context, *initOptions) error) *cobra.Command {
	o := &initOptions{f: f}
	cmd := &cobra.Command{
		Use:   "init [flags] -- SERVER_COMMAND [ARGS...]",
		Short: "Print the host configuration that puts hoist-mcp in front of a server",
		Long: `init prints what to put in an MCP host's configuration so that the host
talks to a server through hoist-mcp, which records every session.

Without --listen, each host starts its own proxy over stdio: init prints the
"mcpServers" entry whose command is hoist-mcp, with the server's command
after --.

With --listen ADDR, one proxy serves every host over Streamable HTTP: init
prints the command that starts it, and the configuration by URL for Claude
Code, VS Code and Cursor. Without --listen-token-file ADDR must be a
loopback address; with it, hosts send the token as a bearer token, read
here from the environment variable HOIST_TOKEN.

With --flow FILE the proxy also serves that flow. A flow looks up only the
tools of the server it was learned from, by the name its sessions were
recorded with, so init puts that name in the command (--server-name; a
flow of several servers needs it given here, one of them), the flow's
domain (unless --domain says otherwise) and the flow's absolute path.

Hosts start servers in a directory and with a PATH of their own, so every
path init writes is absolute: hoist-mcp as the PATH finds it (else the one
beside this hoist, with a warning that it is not on the PATH), --record
(unless it starts with ~, which hoist-mcp expands itself) and
--listen-token-file.`,
		Example: `  # One proxy for every host, recording to ~/.hoist/logs:
  hoist init --listen 127.0.0.1:8931 --domain orders -- npx -y some-mcp-server

  # The stdio entry for a host's mcpServers:
  hoist init --domain orders -- npx -y some-mcp-server

  # Serve a learned flow to every session, under the name it was learned with:
  hoist init --flow retail.flow.json -- npx -y some-mcp-server`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() > 0 {
				return &FlagError{fmt.Errorf("unexpected argument %q: put the server command after --", args[0])}
			}
			o.command = args
			if len(o.command) == 0 {
				return &FlagError{errors.New("no server command: put it after --, for example: hoist init --listen 127.0.0.1:8931 -- npx -y some-mcp-server")}
			}
			if o.listen != "" {
				host, port, err := net.SplitHostPort(o.listen)
				if err != nil || port == "" || port == "0" {
					return &FlagError{fmt.Errorf("--listen %q: want host:port with a fixed port, such as 127.0.0.1:8931", o.listen)}
				}
				if o.tokenFile == "" && !isLoopback(host) {
					return &FlagError{fmt.Errorf("--listen %s: without --listen-token-file the proxy serves only loopback addresses", o.listen)}
				}
			} else if o.tokenFile != "" {
				return &FlagError{errors.New("--listen-token-file: needs --listen")}
			}
			if o.flowFile != "" {
				if err := o.readFlow(); err != nil {
					return err
				}
			}
			if o.name == "" {
				o.name = o.domain
			}
			if o.name == "" {
				o.name = "hoist"
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runInit(o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.listen, "listen", "", "serve hosts over Streamable HTTP at `ADDR` (host:port) with one proxy")
	fl.StringVar(&o.record, "record", "~/.hoist/logs", "`DIR` the proxy records sessions to")
	fl.StringVar(&o.domain, "domain", "", "domain `NAME` written into each session log")
	fl.StringVar(&o.name, "name", "", "the server's `NAME` in the host's configuration (default: the domain, else hoist)")
	fl.StringVar(&o.tokenFile, "listen-token-file", "", "`FILE` holding the bearer token hosts must send (with --listen)")
	fl.BoolVar(&o.json, "json", false, "print the configuration as one JSON object")
	fl.StringVar(&o.flowFile, "flow", "", "serve the flow in `FILE` (from hoist learn or compile), under the server name it was learned with")
	fl.StringVar(&o.serverName, "server-name", "", "the server's `NAME` in its session logs, which a flow's lookups go by (default: the flow's one server)")
	return cmd
}

// readFlow reads --flow and settles the server name and domain it is served
// with.
func (o *initOptions) readFlow() error {
	f, err := flow.Load(o.flowFile)
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(o.flowFile)
	if err != nil {
		return err
	}
	o.flowFile = abs
	switch {
	case o.serverName != "" && !slices.Contains(f.Servers, o.serverName):
		return &FlagError{fmt.Errorf("--server-name %s: the flow serves %s, so it would look nothing up under that name", o.serverName, strings.Join(f.Servers, ", "))}
	case o.serverName == "" && len(f.Servers) == 1:
		o.serverName = f.Servers[0]
	case o.serverName == "":
		return &FlagError{fmt.Errorf("--server-name: the flow serves %s; name the one this proxy stands in front of", strings.Join(f.Servers, ", "))}
	}
	if o.domain == "" {
		o.domain = f.Domain
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// initConfig is what init prints with --json.
type initConfig struct {
	Mode       string          `json:"mode"` // stdio or http
	Command    []string        `json:"command"`
	URL        string          `json:"url,omitempty"`
	ClaudeCode string          `json:"claude_code"`
	VSCode     json.RawMessage `json:"vscode"`
	Cursor     json.RawMessage `json:"cursor"`
}

// hostProxy returns the hoist-mcp a host should start, by absolute path,
// since hosts start servers with a PATH of their own: the one the user's
// PATH finds, else the one beside the running hoist (go install puts them
// together). warning is non-empty when hoist-mcp is not on the PATH.
func hostProxy() (path, warning string) {
	if p, err := exec.LookPath("hoist-mcp"); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs, ""
		}
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "hoist-mcp")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, "hoist-mcp is not on the PATH; the configuration names it by its absolute path, " + p
		}
	}
	return "hoist-mcp", "hoist-mcp is neither on the PATH nor beside hoist: install it (go install ./cmd/... in hoist's checkout) and put its absolute path in the configuration's command"
}

// absPath makes a path a host's proxy reads absolute: hosts start servers
// in a directory of their own. ~ is left to hoist-mcp, which expands it.
func absPath(p string) string {
	if p == "" || strings.HasPrefix(p, "~") {
		return p
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

func runInit(o *initOptions) error {
	proxy, warning := hostProxy()
	if warning != "" {
		w := o.f.IO.Err
		if w == nil {
			w = o.f.IO.Out // the console's hosts page: shown above the configuration
		}
		fmt.Fprintln(w, "hoist: warning: "+warning)
	}
	o.record, o.tokenFile = absPath(o.record), absPath(o.tokenFile)
	proxyArgs := []string{"--record", o.record}
	if o.domain != "" {
		proxyArgs = append(proxyArgs, "--domain", o.domain)
	}
	if o.serverName != "" {
		proxyArgs = append(proxyArgs, "--server-name", o.serverName)
	}
	if o.flowFile != "" {
		proxyArgs = append(proxyArgs, "--flow", o.flowFile)
	}
	c := initConfig{Mode: "stdio"}
	if o.listen == "" {
		args := append(append(proxyArgs, "--"), o.command...)
		c.Command = append([]string{proxy}, args...)
		entry := map[string]any{"command": proxy, "args": args}
		c.ClaudeCode = "claude mcp add " + o.name + " -- " + shellJoin(c.Command)
		c.VSCode = mustJSON(map[string]any{"servers": map[string]any{o.name: map[string]any{"type": "stdio", "command": proxy, "args": args}}})
		c.Cursor = mustJSON(map[string]any{"mcpServers": map[string]any{o.name: entry}})
	} else {
		c.Mode = "http"
		c.URL = "http://" + o.listen + "/mcp"
		c.Command = append([]string{proxy, "--listen", o.listen}, proxyArgs...)
		if o.tokenFile != "" {
			c.Command = append(c.Command, "--listen-token-file", o.tokenFile)
		}
		c.Command = append(append(c.Command, "--"), o.command...)
		vs := map[string]any{"type": "http", "url": c.URL}
		cur := map[string]any{"url": c.URL}
		c.ClaudeCode = "claude mcp add --transport http " + o.name + " " + c.URL
		if o.tokenFile != "" {
			c.ClaudeCode += ` --header "Authorization: Bearer $HOIST_TOKEN"`
			vs["headers"] = map[string]string{"Authorization": "Bearer ${env:HOIST_TOKEN}"}
			cur["headers"] = map[string]string{"Authorization": "Bearer ${env:HOIST_TOKEN}"}
		}
		c.VSCode = mustJSON(map[string]any{"servers": map[string]any{o.name: vs}})
		c.Cursor = mustJSON(map[string]any{"mcpServers": map[string]any{o.name: cur}})
	}
	out := o.f.IO.Out
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(c)
	}
	if c.Mode == "http" {
		fmt.Fprintf(out, "Start the proxy once; it serves every host at %s:\n\n  %s\n\n", c.URL, shellJoin(c.Command))
	} else {
		fmt.Fprintf(out, "Each host starts its own proxy over stdio. The command:\n\n  %s\n\n", shellJoin(c.Command))
	}
	fmt.Fprintf(out, "Claude Code:\n\n  %s\n\n", c.ClaudeCode)
	fmt.Fprintf(out, "VS Code (.vscode/mcp.json):\n\n%s\n\n", indentJSON(c.VSCode))
	fmt.Fprintf(out, "Cursor (~/.cursor/mcp.json):\n\n%s\n", indentJSON(c.Cursor))
	if o.record != "" && strings.HasPrefix(o.record, "~") {
		fmt.Fprintf(out, "\nSessions are recorded to %s (hosts start servers without a shell; hoist-mcp expands ~ itself).\n", o.record)
	}
	return nil
}

func mustJSON(v any) json.RawMessage {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return json.RawMessage(strings.TrimSpace(b.String()))
}

func indentJSON(raw json.RawMessage) string {
	var v any
	json.Unmarshal(raw, &v)
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("  ", "  ")
	enc.Encode(v)
	return "  " + strings.TrimSpace(b.String())
}

// shellJoin quotes args for a POSIX shell where needed.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./-_~", r))
		}) < 0 {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
