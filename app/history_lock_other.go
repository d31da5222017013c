//go:build !unix

package app

import "os"

// lockFile is a no-op where flock is not available: a folder is then
// removed only by its own app (Close).
func lockFile(*os.File) error { return nil }

// tryLockFile never finds another app's folder stale.
func tryLockFile(*os.File) bool { return false }
