package proxy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ExpandHome expands a leading ~ or ~/ in path to the user's home
// directory: hosts start servers without a shell (manual, "Usage").
func ExpandHome(path string) (string, error) {
	if path != "~" && !strings.HasPrefix(path, "~/") {
		return path, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("expanding %s: %w", path, err)
	}
	return filepath.Join(home, strings.TrimPrefix(path, "~")), nil
}

// recorded returns what the log records of a line the stdio proxy read
// and forwarded as it is: the line without its '\n', a '\r' before it
// kept. The manual's message is "the line exactly as it was sent": a \r
// after a JSON value is JSON whitespace, which the log line holds after
// the message member, and a raw line's text ends in it.
func recorded(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		return line[:n-1]
	}
	return line
}

// recordDir creates dir (and parents) with mode 0700 when it is missing.
// An existing directory keeps its mode.
func recordDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating record directory: %w", err)
	}
	return nil
}

// prunable reports whether name is a file hoist-mcp writes into a record
// directory: session logs and their sidecars.
func prunable(name string) bool {
	for _, suf := range []string{".jsonl", ".jsonl.zst", ".meta.json"} {
		if strings.HasSuffix(name, suf) {
			return true
		}
	}
	return false
}

// Prune deletes the session files in dir last modified more than days days
// before now (--retain-days). Other files are left alone. It returns how many
// files it deleted.
func Prune(dir string, days int, now time.Time) (int, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("pruning %s: %w", dir, err)
	}
	cutoff := now.Add(-time.Duration(days) * 24 * time.Hour)
	n := 0
	for _, e := range entries {
		if !e.Type().IsRegular() || !prunable(e.Name()) {
			continue
		}
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(cutoff) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err == nil {
			n++
		}
	}
	return n, nil
}
