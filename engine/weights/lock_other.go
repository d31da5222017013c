//go:build !unix

package weights

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// lockFile takes an exclusive lock by creating path with O_EXCL (no flock
// on this platform); the lock is released by the returned func. A lock left
// by a crashed process must be deleted by hand; the error while waiting says
// which file.
func lockFile(ctx context.Context, path string, onWait func()) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	waited := false
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			f.Close()
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		if !waited && onWait != nil {
			onWait()
		}
		waited = true
		select {
		case <-ctx.Done():
			return nil, errors.Join(ctx.Err(), errors.New("waiting for lock "+path+"; delete it if no download is running"))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
