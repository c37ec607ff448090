// Package oraclecli holds the System-One model's flags, --oracle,
// --oracle-url, --oracle-model and --oracle-cache, for every command that
// asks it (hoist-mcp, hoist confirm, hoist promote), so that they read,
// default and fail alike, and open one oracle over one cache.
package oraclecli

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/hoist-mcp/hoist/oracle"
	"github.com/hoist-mcp/hoist/oracle/client"
)

// Flags are the oracle's flag values.
type Flags struct {
	Mode  string
	URL   string
	Model string
	Cache string
}

// Help is a paragraph for a command's --help about these flags.
const Help = `The System-One model. --oracle jev (the default) asks a model over the
OpenAI-compatible chat-completions protocol at --oracle-url (or
HOIST_ORACLE_URL), with the key in TYPESAFE_API_KEY or in the file
TYPESAFE_API_KEY_FILE names; --oracle replay answers from the cache only;
--oracle mock answers by a fixed word rule, with no network, for trying things.
Answers are cached in --oracle-cache (default ~/.hoist/oracle-cache) by a
hash of the question, and shared by hoist-mcp, hoist confirm and hoist
promote. A question that cannot be answered (no key, a replay miss, an
error) is no opinion: it refuses nothing. docs/privacy.md says what the
model is sent.`

// Add registers the flags on fl.
func (f *Flags) Add(fl *pflag.FlagSet) {
	fl.StringVar(&f.Mode, "oracle", string(client.DefaultMode), "who answers the System-One model's questions: jev, replay (the cache only) or mock (`MODE`)")
	fl.StringVar(&f.URL, "oracle-url", "", "base `URL` of the model's OpenAI-compatible server, such as http://127.0.0.1:8000/v1 (default $"+client.EnvURL+")")
	fl.StringVar(&f.Model, "oracle-model", "", "the model's `NAME` on that server; part of every answer's cache key")
	fl.StringVar(&f.Cache, "oracle-cache", "", "the answers' cache `DIR` (default ~/.hoist/oracle-cache)")
}

// Check reads the flag values, returning a usage error naming the flag.
func (f *Flags) Check() error {
	if _, err := client.ParseMode(f.Mode); err != nil {
		return fmt.Errorf("--oracle: %w", err)
	}
	if f.Cache != "" && strings.TrimSpace(f.Cache) == "" {
		return fmt.Errorf("--oracle-cache: want a directory")
	}
	return nil
}

// CacheDir is --oracle-cache, or its default. A leading ~ is the
// caller's to expand (hoist-mcp does, for hosts that start it without a
// shell).
func (f *Flags) CacheDir() (string, error) {
	if f.Cache != "" {
		return f.Cache, nil
	}
	return client.DefaultCacheDir()
}

// Open opens the cache and the oracle. Unavailable, when not "", says why
// jev cannot ask the model (no key, no URL, no model name): it still
// answers from the cache, and a command says so once, up front, rather
// than once per question. getenv nil is os.Getenv.
func (f *Flags) Open(warn func(string), getenv func(string) string) (o oracle.Oracle, cache *client.Cache, unavailable string, err error) {
	mode, err := client.ParseMode(f.Mode)
	if err != nil {
		return nil, nil, "", fmt.Errorf("--oracle: %w", err)
	}
	if mode != client.ModeMock {
		dir, err := f.CacheDir()
		if err != nil {
			return nil, nil, "", err
		}
		if cache, err = client.OpenCache(dir, warn); err != nil {
			return nil, nil, "", fmt.Errorf("--oracle-cache: %w", err)
		}
	}
	o, err = client.New(client.Config{Mode: mode, URL: f.URL, Model: f.Model, Cache: cache, Getenv: getenv, Warn: warn})
	if err != nil {
		return nil, nil, "", fmt.Errorf("--oracle %s: %w", mode, err)
	}
	if j, ok := o.(*client.Jev); ok {
		unavailable = j.Unavailable()
	}
	return o, cache, unavailable, nil
}
