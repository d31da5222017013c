package voices

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// MaxNameRunes bounds a voice name: long enough for "Grandma reading,
// kitchen, 2025", short enough for a picker and a file name.
const MaxNameRunes = 64

// maxKeyBytes keeps a voice's file name (key + ".json") under the 255
// bytes ext4, XFS and APFS allow.
const maxKeyBytes = 240

// CheckName says why name cannot name a voice, or nil. A name becomes a
// file name, so it may not hold a path separator, be "." or "..", or start
// with a dot (the library keeps its temporary files there); it must be
// printable text without leading or trailing spaces, so that what a list
// shows is what a user types.
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("a voice name cannot be empty")
	case !utf8.ValidString(name):
		return fmt.Errorf("voice name %q is not valid UTF-8 text", name)
	case utf8.RuneCountInString(name) > MaxNameRunes:
		return fmt.Errorf("voice name %q is too long: at most %d characters", name, MaxNameRunes)
	case strings.ContainsAny(name, `/\`):
		return fmt.Errorf("voice name %q holds a path separator (/ or \\): a voice name is a plain name, not a path", name)
	case name == "." || name == "..":
		return fmt.Errorf("voice name %q is not allowed: . and .. name folders", name)
	case name[0] == '.':
		return fmt.Errorf("voice name %q starts with a dot: start it with a letter or a digit", name)
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("voice name %q starts or ends with a space", name)
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("voice name %q holds an unprintable character (U+%04X)", name, r)
		}
	}
	if len(key(name)) > maxKeyBytes {
		return fmt.Errorf("voice name %q is too long for a file name: use fewer characters", name)
	}
	return nil
}

// key is the form two names are compared in: Unicode case folding of the
// canonical decomposition, recomposed (NFC), so "Anna", "ANNA" and an
// "Ännä" typed with combining marks are one voice. A voice's file is its
// key plus ".json", so a case-insensitive file system (macOS, Windows)
// holds the same set of voices as a case-sensitive one.
func key(name string) string {
	return norm.NFC.String(cases.Fold().String(norm.NFD.String(name)))
}
