//go:build !unix

package store

import (
	"context"
	"fmt"
	"os"
)

// lockBuild opens (making it) the file a store is built in. Without flock
// two builds of one store at once are not kept apart: the second to
// publish finds the first's store at the path and says so.
func lockBuild(ctx context.Context, path, tmp string) (*os.File, error) {
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating store %s: %w", path, err)
	}
	return f, nil
}
