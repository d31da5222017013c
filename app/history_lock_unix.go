//go:build unix

package app

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on f, held until f is closed (or the
// process ends, however it ends).
func lockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// tryLockFile reports whether f could be locked: no running app holds it.
func tryLockFile(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
