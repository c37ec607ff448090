// Package console is hoist console: a local web page over the sessions
// hoist-mcp recorded (a directory of logs, read as they grow, or a store
// opened read-only), the flows learned from them and what serving them
// saves (issue 15).
//
// Its pages say nothing of their own about sessions or flows: the rows
// come from store and episode, a lookup is a hit or a detour by
// audit.Recorded, a flow's graph is flow.Review (hoist flow-show's content),
// the savings are audit.Run, and the hosts' configuration is what hoist init
// prints (the caller passes init's code in as Options.Hosts, since the
// command line imports the console and not the other way round).
//
// Everything the page needs is embedded (assets/): plain HTML drawn on the
// server, one style sheet, a little hand-written JavaScript for the live
// updates; no network, no build step. Live: the server polls the directory
// (Options.Poll) and tells each open page, by server-sent events on
// /events, which session appeared or grew; the page then reads itself
// again.
//
// Who may connect is hoist-mcp --listen's rule: loopback only, with the
// Host and Origin headers checked, unless a token is set, which every
// request then carries.
package console
