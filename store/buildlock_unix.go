//go:build unix

package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockBuild opens (making it) the file a store is built in, and locks it
// (flock) for this build: a second build of the same store waits here
// until the first has published its file or removed it. A file a crashed
// build left is not locked, and is taken over.
func lockBuild(ctx context.Context, path, tmp string) (*os.File, error) {
	for wait := time.Millisecond; ; {
		f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE, 0o600)
		if errors.Is(err, os.ErrPermission) {
			return nil, fmt.Errorf("creating store %s: %w (its directory is not writable)", path, os.ErrPermission)
		} else if err != nil {
			return nil, fmt.Errorf("creating store %s: %w", path, err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			// The file may have been published or removed between the open
			// and the lock: then it is not the file at tmp any more.
			held, err1 := f.Stat()
			now, err2 := os.Stat(tmp)
			if err1 == nil && err2 == nil && os.SameFile(held, now) {
				return f, nil
			}
			f.Close()
			continue
		}
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return nil, fmt.Errorf("creating store %s: locking %s: %w", path, tmp, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 100*time.Millisecond)
	}
}
