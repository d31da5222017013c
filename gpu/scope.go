//go:build cuda

package gpu

// Scopes: tensor bookkeeping deferred to the end of a Run.
//
// Every tensor the collector may have to release carries a cleanup and a
// weak pointer (track). Registering them costs about a microsecond a
// tensor on the host, much of it walking the span's list of specials, and
// a short prompt's prefill makes hundreds of tensors and frees nearly all
// of them itself before its Run ends: host work the GPU waited for. So a
// tensor the owner goroutine makes inside Run joins the Run's scope
// instead, and when the Run ends only the ones still live (not freed) are
// handed to the collector. A collection the pool starts inside the Run
// hands the scope's live tensors over first (pool.collectBehind,
// pool.collect), so nothing a collection could have found is hidden from
// it.

// runScope is the tensors made inside the Run in progress (owner
// goroutine only).
type runScope struct {
	made []*tensor
}

// inScope runs f with a scope open, unless one already is (a Run inside
// a Run), and hands the scope's survivors to the collector afterwards,
// also when f panics (owner goroutine).
func (b *Backend) inScope(f func()) {
	if b.scope != nil {
		f()
		return
	}
	s := b.spare
	if s == nil {
		s = &runScope{}
	}
	b.spare, b.scope = nil, s
	defer func() {
		b.scope = nil
		s.flush()
		b.spare = s
	}()
	f()
}

// flush hands the scope's live tensors to the collector and empties it.
func (s *runScope) flush() {
	for i, t := range s.made {
		if !t.h.done.Load() {
			track(t)
		}
		s.made[i] = nil
	}
	s.made = s.made[:0]
}
