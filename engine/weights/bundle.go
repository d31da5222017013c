package weights

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Variant picks the Zonos backbone: "hybrid" (Mamba2 + attention) or
// "transformer".
type Variant string

const (
	Hybrid      Variant = "hybrid"
	Transformer Variant = "transformer"
)

// Variants lists every variant, in the order the CLI and GUI show them.
func Variants() []Variant { return []Variant{Hybrid, Transformer} }

// ParseVariant accepts "hybrid" or "transformer" (any case).
func ParseVariant(s string) (Variant, error) {
	v := Variant(strings.ToLower(strings.TrimSpace(s)))
	switch v {
	case Hybrid, Transformer:
		return v, nil
	}
	return "", fmt.Errorf("model variant %q: use hybrid or transformer", s)
}

// Repo is the variant's hub repository.
func (v Variant) Repo() string { return "Zyphra/Zonos-v0.1-" + string(v) }

// The repositories every variant shares (ARCHITECTURE.md, "Model bundle on disk").
const (
	DACRepo     = "descript/dac_44khz"
	SpeakerRepo = "Zyphra/Zonos-v0.1-speaker-embedding"
)

// BundleFiles lists the six files a variant needs, in the order Bundle holds
// them: model config and weights, DAC config and weights, speaker ResNet and
// its LDA.
func BundleFiles(v Variant) []RepoFile {
	return []RepoFile{
		{v.Repo(), "config.json"},
		{v.Repo(), "model.safetensors"},
		{DACRepo, "config.json"},
		{DACRepo, "model.safetensors"},
		{SpeakerRepo, "ResNet293_SimAM_ASP_base.pt"},
		{SpeakerRepo, "ResNet293_SimAM_ASP_base_LDA-128.pt"},
	}
}

// AllFiles is every file of every variant, shared ones once.
func AllFiles() []RepoFile {
	var out []RepoFile
	seen := map[RepoFile]bool{}
	for _, v := range Variants() {
		for _, f := range BundleFiles(v) {
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	return out
}

// Bundle is the paths of a complete model bundle on disk. The files are
// untrusted input all the same: their parsers check them.
type Bundle struct {
	Variant        Variant
	ModelConfig    string // Zyphra/Zonos-v0.1-<variant>/config.json
	ModelWeights   string // Zyphra/Zonos-v0.1-<variant>/model.safetensors
	DACConfig      string // descript/dac_44khz/config.json
	DACWeights     string // descript/dac_44khz/model.safetensors
	SpeakerWeights string // ResNet293_SimAM_ASP_base.pt
	SpeakerLDA     string // ResNet293_SimAM_ASP_base_LDA-128.pt
	// Entries holds every file with its revision, blob and size, in
	// BundleFiles order.
	Entries []Entry
}

// FindBundle resolves the variant's files in the cache without touching the
// network. When any is missing it returns a *MissingError naming each one and
// where it would go.
func FindBundle(c Cache, v Variant) (*Bundle, error) {
	if _, err := ParseVariant(string(v)); err != nil {
		return nil, err
	}
	files := BundleFiles(v)
	entries, missing, err := c.lookupAll(files, DefaultRevision)
	if err != nil {
		return nil, err
	}
	if len(missing) > 0 {
		return nil, &MissingError{Cache: c, Variant: v, Missing: missing}
	}
	return newBundle(v, entries), nil
}

// LocateBundle is FindBundle on DefaultCache: what the engine calls.
func LocateBundle(v Variant) (*Bundle, error) {
	c, err := DefaultCache()
	if err != nil {
		return nil, err
	}
	return FindBundle(c, v)
}

func newBundle(v Variant, e []Entry) *Bundle {
	return &Bundle{
		Variant:     v,
		ModelConfig: e[0].Path, ModelWeights: e[1].Path,
		DACConfig: e[2].Path, DACWeights: e[3].Path,
		SpeakerWeights: e[4].Path, SpeakerLDA: e[5].Path,
		Entries: e,
	}
}

// lookupAll resolves files; entries has one slot per file (zero when missing).
func (c Cache) lookupAll(files []RepoFile, revision string) (entries []Entry, missing []MissingFile, err error) {
	entries = make([]Entry, len(files))
	for i, f := range files {
		e, ok, err := c.Lookup(f, revision)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			missing = append(missing, MissingFile{f, c.Dest(f, revision)})
			continue
		}
		entries[i] = e
	}
	return entries, missing, nil
}

// MissingFile is a file not in the cache and the path it would take.
type MissingFile struct {
	RepoFile
	Dest string
}

// MissingError says which bundle files are not on disk, where each would go,
// and why nothing fetched them (Reason: offline mode, no network).
type MissingError struct {
	Cache   Cache
	Variant Variant // "" when the files span variants
	Missing []MissingFile
	Reason  string // "" when no download was attempted
	Err     error  // the network error behind Reason, if any
}

func (e *MissingError) Unwrap() error { return e.Err }

func (e *MissingError) Error() string {
	var b strings.Builder
	what := "model files"
	if e.Variant != "" {
		what = fmt.Sprintf("model bundle %q:", e.Variant)
	}
	fmt.Fprintf(&b, "%s %d file(s) missing from the Hugging Face cache %s", what, len(e.Missing), e.Cache.Dir)
	if e.Reason != "" {
		fmt.Fprintf(&b, " (%s)", e.Reason)
	}
	b.WriteString(":\n")
	for _, m := range e.Missing {
		fmt.Fprintf(&b, "  %s -> %s\n", m.RepoFile, m.Dest)
	}
	pull := "zonos pull"
	if e.Variant != "" {
		pull += " " + string(e.Variant)
	}
	switch {
	case e.Reason == "":
		fmt.Fprintf(&b, "fix: run '%s'", pull)
	default:
		fmt.Fprintf(&b, "fix: run '%s' with network access (HF_HUB_OFFLINE unset; HF_ENDPOINT may name a mirror)", pull)
	}
	fmt.Fprintf(&b, ", or copy the files to the paths above (set HF_HUB_CACHE or HF_HOME to use another cache)")
	return b.String()
}

// FileStatus is what `zonos models` and the GUI show for one file.
type FileStatus struct {
	RepoFile
	Present bool
	Entry   Entry        // when Present
	Check   Verification // when Present
	Dest    string       // when missing: where it would go
	Partial int64        // bytes of an interrupted download waiting to resume
}

// Status reports each file: present (with size, verification and path) or
// missing (with where it would go and any partial download). It reads only
// the disk; nothing is hashed (see Cache.Verify).
func (c Cache) Status(files []RepoFile) ([]FileStatus, error) {
	out := make([]FileStatus, len(files))
	for i, f := range files {
		e, ok, err := c.Lookup(f, DefaultRevision)
		if err != nil {
			return nil, err
		}
		st := FileStatus{RepoFile: f, Present: ok}
		if ok {
			st.Entry = e
			st.Check = c.verification(e)
		} else {
			st.Dest = c.Dest(f, DefaultRevision)
			st.Partial = c.partialBytes(f)
		}
		out[i] = st
	}
	return out, nil
}

// partialBytes is the size of the largest resumable download of f, found
// through the record pending/ keeps for each .incomplete file.
func (c Cache) partialBytes(f RepoFile) int64 {
	p, ok := c.readPending(f)
	if !ok {
		return 0
	}
	n, _ := fileSize(filepath.Join(c.RepoDir(f.Repo), "blobs", p.Incomplete))
	return n
}
