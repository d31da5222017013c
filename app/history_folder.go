package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultHistoryDir is where the app's history keeps long utterances:
// <user cache>/zonos-stream/history ("" when the system names no cache
// folder; the history then keeps everything in memory).
func DefaultHistoryDir() string {
	c, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(c, "zonos-stream", "history")
}

// spoolFolder is one running app's folder under the history root,
// "app-<random>", with a lock file held (flock) while the app runs. The
// history does not outlive the app: Close removes the folder, and the next
// start removes any folder whose lock is free (an app that crashed), while
// a second app running beside it keeps its own.
type spoolFolder struct {
	dir  string
	lock *os.File
}

// staleUnlocked is how old a folder without a lock file must be before it
// counts as stale (younger, its app may be creating the lock right now).
const staleUnlocked = time.Minute

func openSpoolFolder(root string) (*spoolFolder, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("history folder: %w", err)
	}
	removeStaleFolders(root)
	dir, err := os.MkdirTemp(root, "app-")
	if err != nil {
		return nil, fmt.Errorf("history folder: %w", err)
	}
	lock, err := os.Create(filepath.Join(dir, "lock"))
	if err == nil {
		if err = lockFile(lock); err != nil {
			lock.Close()
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("history folder: %w", err)
	}
	return &spoolFolder{dir: dir, lock: lock}, nil
}

// removeStaleFolders deletes the folders of apps that are no longer
// running.
func removeStaleFolders(root string) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "app-") {
			continue
		}
		dir := filepath.Join(root, e.Name())
		f, err := os.Open(filepath.Join(dir, "lock"))
		if err != nil {
			if info, serr := e.Info(); serr == nil && time.Since(info.ModTime()) > staleUnlocked {
				os.RemoveAll(dir)
			}
			continue
		}
		if tryLockFile(f) {
			os.RemoveAll(dir)
		}
		f.Close()
	}
}

// Close removes the folder and everything in it.
func (f *spoolFolder) Close() error {
	err := os.RemoveAll(f.dir)
	f.lock.Close()
	return err
}
