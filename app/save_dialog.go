package app

import "os"

// removeDialogFile removes the empty file fyne's save dialog leaves at path:
// it creates the file it hands over, emptying one that was there, before
// anything is written. What is saved there afterwards arrives by rename
// (audio.CreateWAV), so a cancelled or failed write leaves nothing at the
// path instead of an empty file. A file with content is left alone.
func removeDialogFile(path string) {
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() && st.Size() == 0 {
		os.Remove(path)
	}
}
