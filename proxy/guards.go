package proxy

import (
	"bytes"
	"errors"
	"fmt"
	machine "github.com/hoist-mcp/hoist/active"
	"os"

	"github.com/hoist-mcp/hoist/guards"
	"github.com/hoist-mcp/hoist/jsonrpc"
	"github.com/hoist-mcp/hoist/mcplog"
	"github.com/hoist-mcp/hoist/mcpmsg"
)

// GuardsOptions check each of the agent's writes against a domain's policy
// before the server sees it (hoist-mcp --guards; manual, "Active mode").
type GuardsOptions struct {
	// Domain picks the rules: guards.Retail or guards.Airline.
	Domain string
	// Modes override the rules' default modes, by rule id (--guard).
	Modes map[string]guards.Mode
	// Log is the guards log's path ({session} stands for the session); ""
	// means <session>.guards.jsonl beside the session log, or none.
	Log string
	// Judge, when set, is the confirmation judge (--confirm-judge).
	Judge *JudgeOptions
}

// LimitsOptions are --limit and --max-calls: a call over a limit is
// answered with a tool error and never reaches the server
// (docs/limits.md).
type LimitsOptions = machine.LimitsConfig

// PinsOptions are --pin-tools and the flags under it: each tools/list
// answer is compared with a pin file's definitions (docs/tools.md).
type PinsOptions = machine.PinsConfig

// ParsePinAction reads a --pin-tools-action or --pin-tools-new value
// (active.ParsePinAction).
func ParsePinAction(s string) (machine.PinAction, error) { return machine.ParsePinAction(s) }

// ParseLimit reads a --limit value, TOOL=N/PERIOD (active.ParseLimit).
func ParseLimit(s string) (machine.Limit, error) { return machine.ParseLimit(s) }

// activeMode reports whether the session needs the active owner: a flow,
// the guards, hoist_commit, limits or pinned tools.
func (o *Options) activeMode() bool {
	return o.Flow != nil || o.Guards != nil || o.Commit || o.Limits != nil || o.Pins != nil
}

// guardsLogs are --guards' side of one session in the proxy: its log, the
// judge's, and its own reader of the conversation; the checks themselves
// are the Machine's (package active). With limits and no --guards, only
// the log is kept, for the limits' refusals.
type guardsLogs struct {
	log *mcplog.Writer
	// ownLog is true when log was made for this session alone (beside its
	// session log), not a --guards-log that sessions may share.
	ownLog bool
	// context reads the --context file for the guards alone: the
	// conversation up to each check, whoever else reads the file. The
	// transport reads it before it hands the owner a held write.
	context *contextTail
	// jd is the confirmation judge, nil when off (judge.go).
	jd *judgeState
}

// setUpActive prepares the guards and hoist_commit of a session (o.Guards,
// o.Commit): the guards log ({session} is session), their own reader of
// the conversation, and the session's Machine.
func (a *active) setUpActive(o Options, rec *mcplog.Writer, context *contextTail, session string) error {
	a.session = session
	a.commit = o.Commit
	a.limits = o.Limits
	a.pins = o.Pins
	var err error
	if o.Guards != nil {
		if _, gerr := guards.NewSession(guards.Config{Domain: o.Guards.Domain, Modes: o.Guards.Modes}); gerr != nil {
			return errors.Join(fmt.Errorf("--guards: %w", gerr), a.build())
		}
		a.guards = o.Guards
		g := &guardsLogs{}
		if context != nil {
			g.context = &contextTail{path: context.path}
		}
		a.gd = g
		w, lerr := openGuardsLog(o.Guards.Log, rec, session)
		g.log, g.ownLog = w, w != nil && o.Guards.Log == ""
		// The judge judges without its log, as the guards check without theirs.
		jd, jerr := newJudgeState(o.Guards.Judge, rec, session)
		g.jd = jd
		err = errors.Join(lerr, jerr)
	} else if o.Limits != nil {
		// The limits' refusals have a line in the guards log too
		// (docs/limits.md): kept beside the session log, as --guards'.
		w, lerr := openGuardsLog("", rec, session)
		a.gd = &guardsLogs{log: w, ownLog: w != nil}
		err = lerr
	}
	return errors.Join(err, a.build())
}

// openGuardsLog opens a session's guards log: --guards-log FILE ({session}
// standing for the session), appended to, since sessions may share it;
// else <session>.guards.jsonl beside the session log, made new; else none.
func openGuardsLog(flag string, rec *mcplog.Writer, session string) (*mcplog.Writer, error) {
	return openSideLog(flag, rec, session, mcplog.GuardsSuffix, "guards log")
}

// closeGuards closes the guards log, once the loop has returned.
func (a *active) closeGuards() error {
	if a.gd == nil {
		return nil
	}
	err := a.gd.jd.close()
	if a.gd.log != nil {
		err = errors.Join(a.gd.log.Close(), err)
	}
	return err
}

// removeOwnGuardsLog removes the guards log of a session that never
// started, when it was this session's own: a shared --guards-log holds
// other sessions' lines.
func (a *active) removeOwnGuardsLog() {
	if a.gd != nil && a.gd.log != nil && a.gd.ownLog {
		os.Remove(a.gd.log.Path())
	}
	if a.gd != nil {
		a.gd.jd.removeOwn()
	}
}

// needsNoVerdict reports whether the server's response m may go on to the
// host before the owner has seen it: without a flow, only hoist_commit's
// answers and, with --commit, the answers to initialize and tools/list
// (which it rewrites), and with pinned tools it may hide, the answers to
// tools/list, are the owner's to decide. The others are handed to
// the owner without waiting, before they are forwarded, so the guards learn
// from each before any call the host makes after reading it.
func (a *active) needsNoVerdict(m jsonrpc.Message) bool {
	if a.opts.Flow != nil || !a.holdsHost() {
		return false
	}
	if !a.commit && !a.pins.Acts() {
		return true
	}
	_, rewrite := a.rewrites.LoadAndDelete(string(m.ID))
	return !rewrite
}

// holdsHost reports whether the host's lines must reach the proxy whole,
// before they are forwarded: with --guards, --commit, limits or pinned
// tools it answers some of them itself. Without either, the host's bytes are relayed as they always
// were.
func (a *active) holdsHost() bool {
	return a.guards != nil || a.commit || a.limits != nil || a.pins != nil
}

// hostLine takes one whole line of the host's (without terminator) before
// it is forwarded, and reports whether the proxy answered it instead: a
// write an enforced rule refused, or hoist_commit. A write the guards check
// waits for the owner's verdict; anything else is only learnt from, as
// fromHost does. The Machine screens the line first (Screen), on the
// transport's goroutine: what two decoders read differently never reaches
// the owner.
func (a *active) hostLine(line []byte) (taken bool) {
	if !a.holdsHost() {
		a.fromHost(line)
		return false
	}
	v := mcpmsg.ReadView(line)
	sc := a.m.Screen(v)
	switch {
	case sc.Answer != nil:
		a.answer(sc.Answer)
		a.say("refused a host message: %s", sc.Why)
		return true
	case sc.Drop:
		a.say("dropped %s", sc.Why)
		return true
	}
	a.hostIDs(v)
	if v.Kind == jsonrpc.Batch {
		b, held := a.m.ScreenBatch(v)
		if !held {
			for _, p := range b.Parts {
				if p.Learn {
					a.send(envelope{ev: p.Req})
				}
			}
			return false
		}
		b.Heard = a.guardsHeard()
		taken := a.ask(envelope{ev: b, taken: make(chan bool, 1)}, false)
		if !taken {
			for _, p := range b.Parts {
				if p.Learn && a.rewritten(p.Req.Method) {
					a.rewrites.Store(p.Req.ID, true)
				}
			}
		}
		return taken
	}
	if !sc.Learn {
		return false
	}
	ev := sc.Req
	if a.rewritten(ev.Method) {
		a.rewrites.Store(ev.ID, true)
	}
	if !sc.Held {
		a.send(envelope{ev: ev})
		return false
	}
	h := &machine.Held{Req: ev, Line: bytes.Clone(line), Heard: a.guardsHeard()}
	return a.ask(envelope{ev: h, taken: make(chan bool, 1)}, false) // when the session is over, nothing checks any more
}

// rewritten reports whether the answer to a host request of method may be
// rewritten by the owner, so that it waits for the owner's verdict:
// hoist_commit's sentence or tool goes into the answers to initialize and
// tools/list, and pinned tools may hide entries of a tools/list answer.
func (a *active) rewritten(method string) bool {
	return a.commit && method != mcpmsg.MethodToolsCall || a.pins.Acts() && method == mcpmsg.MethodToolsList
}

// guardsHeard reads the conversation's new lines for the guards, when a
// --context file is read.
func (a *active) guardsHeard() [][]byte {
	if a.gd == nil || a.gd.context == nil {
		return nil
	}
	return a.gd.context.read()
}

// answer sends the host a line of the proxy's own (without terminator),
// logged as a proxy entry.
func (a *active) answer(line []byte) {
	if a.rec != nil {
		a.rec.Record(mcplog.FromProxy, bytes.Clone(line))
	}
	a.toHost(append(line, '\n'))
}
