package weights

import (
	"fmt"
	"syscall"
)

// checkFreeSpace fails early, naming the directory, when need bytes will
// not fit, instead of failing hours into a download.
func checkFreeSpace(dir string, need int64) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return nil // unknown: a full disk still surfaces as a write error
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	if need > 0 && free < need {
		return fmt.Errorf("needs %s but %s has %s free; free some space or set HF_HUB_CACHE to a larger disk", humanBytes(need), dir, humanBytes(free))
	}
	return nil
}
