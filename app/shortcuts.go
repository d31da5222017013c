package app

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
)

// The window's keyboard shortcuts.
var (
	speakShortcut      = &desktop.CustomShortcut{KeyName: fyne.KeyReturn, Modifier: fyne.KeyModifierShortcutDefault}
	speakEnterShortcut = &desktop.CustomShortcut{KeyName: fyne.KeyEnter, Modifier: fyne.KeyModifierShortcutDefault} // keypad Enter
	saveShortcut       = &desktop.CustomShortcut{KeyName: fyne.KeyS, Modifier: fyne.KeyModifierShortcutDefault}
)

func isSpeakShortcut(s fyne.Shortcut) bool {
	n := s.ShortcutName()
	return n == speakShortcut.ShortcutName() || n == speakEnterShortcut.ShortcutName()
}

// installShortcuts binds Ctrl+Enter, Ctrl+S and Esc on the canvas (when
// no text box has the focus; the compose entry handles them itself), and
// for the Read tab Space (read, pause, resume), Left and Right (skip a
// sentence) and Ctrl+V (read the clipboard's text).
func (ui *UI) installShortcuts() {
	c := ui.Win.Canvas()
	c.AddShortcut(speakShortcut, func(fyne.Shortcut) { ui.Speak() })
	c.AddShortcut(speakEnterShortcut, func(fyne.Shortcut) { ui.Speak() })
	c.AddShortcut(saveShortcut, func(fyne.Shortcut) { ui.SaveLast() })
	c.AddShortcut(&fyne.ShortcutPaste{}, func(fyne.Shortcut) {
		if ui.readingKeys() {
			ui.reading.paste()
		}
	})
	c.SetOnTypedKey(func(k *fyne.KeyEvent) {
		if k.Name == fyne.KeyEscape {
			ui.Stop()
			return
		}
		if ui.readingKeys() {
			ui.reading.key(k)
		}
	})
}

// readingKeys says whether keys go to the Read tab: it is shown and no
// text box has the focus (typing a space there is typing).
func (ui *UI) readingKeys() bool {
	if ui.tabs.Selected() != ui.readTab {
		return false
	}
	return ui.Win.Canvas().Focused() == nil
}
