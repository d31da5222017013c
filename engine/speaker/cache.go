package speaker

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"os"
	"path/filepath"
)

// Cache keeps embeddings on disk, one small file per (model, clip) pair,
// so a clip is embedded once. Writes go to a temporary file that is renamed
// into place, so readers never see a partial entry; a damaged entry reads
// as a miss and is rewritten.
type Cache struct {
	Dir string
	// OnStoreError, when set, hears about embeddings that could not be
	// stored (EmbedCached still returns them).
	OnStoreError func(error)
}

// DefaultCache is <user cache dir>/zonos-stream/speaker
// (~/.cache/zonos-stream/speaker on Linux).
func DefaultCache() (*Cache, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return nil, fmt.Errorf("speaker cache: %w (set XDG_CACHE_HOME or HOME)", err)
	}
	return &Cache{Dir: filepath.Join(d, "zonos-stream", "speaker")}, nil
}

// Key identifies a clip's embedding: a SHA-256 over the model files' hash
// and the decoded 16 kHz samples (their float32 bits).
func (m *Model) Key(samples16k []float32) string {
	h := sha256.New()
	h.Write([]byte("zonos-stream speaker v1\x00"))
	h.Write([]byte(m.ID))
	var buf [4096]byte
	for i := 0; i < len(samples16k); {
		n := 0
		for ; n+4 <= len(buf) && i < len(samples16k); i++ {
			binary.LittleEndian.PutUint32(buf[n:], math.Float32bits(samples16k[i]))
			n += 4
		}
		h.Write(buf[:n])
	}
	return hex.EncodeToString(h.Sum(nil))
}

const cacheMagic = "ZSSPK1\n\x00"

func (c *Cache) path(key string) (string, error) {
	if len(key) != 64 {
		return "", fmt.Errorf("speaker cache: bad key %q", key)
	}
	for _, r := range key {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return "", fmt.Errorf("speaker cache: bad key %q", key)
		}
	}
	return filepath.Join(c.Dir, key[:2], key+".emb"), nil
}

// Get returns the cached vector for key, if present and intact.
func (c *Cache) Get(key string) ([]float32, bool) {
	p, err := c.path(key)
	if err != nil {
		return nil, false
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, false
	}
	return decodeEntry(data)
}

func decodeEntry(data []byte) ([]float32, bool) {
	h := len(cacheMagic)
	if len(data) < h+8 || string(data[:h]) != cacheMagic {
		return nil, false
	}
	n := int(binary.LittleEndian.Uint32(data[h:]))
	if n <= 0 || n > 4096 || len(data) != h+4+4*n+4 {
		return nil, false
	}
	body := data[:h+4+4*n]
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(data[h+4+4*n:]) {
		return nil, false
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[h+4+4*i:]))
	}
	return v, true
}

// Put stores v under key atomically (temporary file, fsync, rename).
func (c *Cache) Put(key string, v []float32) error {
	p, err := c.path(key)
	if err != nil {
		return err
	}
	if len(v) == 0 || len(v) > 4096 {
		return fmt.Errorf("speaker cache: %d values is not an embedding", len(v))
	}
	data := make([]byte, 0, len(cacheMagic)+8+4*len(v))
	data = append(data, cacheMagic...)
	data = binary.LittleEndian.AppendUint32(data, uint32(len(v)))
	for _, x := range v {
		data = binary.LittleEndian.AppendUint32(data, math.Float32bits(x))
	}
	data = binary.LittleEndian.AppendUint32(data, crc32.ChecksumIEEE(data))
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("speaker cache: %w (pick another cache directory)", err)
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("speaker cache: %w", err)
	}
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("speaker cache: writing %s: %w", p, err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("speaker cache: %w", err)
	}
	return nil
}

// Remove deletes every cached embedding.
func (c *Cache) Remove() error {
	err := os.RemoveAll(c.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// EmbedCached returns the LDA vector of a 16 kHz clip from the cache, or
// embeds it and stores it (cache may be nil: no caching); hit reports a
// cache hit. A failed store does not fail the call: it goes to
// cache.OnStoreError when set.
func (m *Model) EmbedCached(ctx context.Context, cache *Cache, samples16k []float32) (v []float32, hit bool, err error) {
	if cache == nil {
		v, err = m.Embed(ctx, samples16k)
		return v, false, err
	}
	key := m.Key(samples16k)
	if v, ok := cache.Get(key); ok && len(v) == m.Config.LDA {
		return v, true, nil
	}
	v, err = m.Embed(ctx, samples16k)
	if err != nil {
		return nil, false, err
	}
	if err := cache.Put(key, v); err != nil && cache.OnStoreError != nil {
		cache.OnStoreError(err)
	}
	return v, false, nil
}
