// Command hoist is the toolkit that turns hoist-mcp's session logs into
// episodes, learns flows from them and measures what serving a flow saves.
//
// Run hoist --help for its commands.
package main
