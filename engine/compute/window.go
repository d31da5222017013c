package compute

import "fmt"

// WindowGeometry checks the arguments of Core.Window (backend names the
// caller in its panic) and returns the rows of the window (B·C), prev's
// columns and x's (0 for nil). prev and x must be F32 [B, C, ·] with the
// same B and C, at least one of them non-nil; lead, trail and keep are
// not negative and keep is at most the window's length.
func WindowGeometry(backend string, prev Tensor, lead int, x Tensor, trail, keep int) (rows, np, nx int) {
	var ref []int
	for _, t := range []Tensor{prev, x} {
		if t == nil {
			continue
		}
		s := t.Shape()
		if len(s) != 3 || t.DType() != F32 || (ref != nil && (s[0] != ref[0] || s[1] != ref[1])) {
			panic(fmt.Sprintf("%s.Window: %v %v with %v: want F32 [B, C, ·] of the same B and C", backend, s, t.DType(), ref))
		}
		ref = s
	}
	if ref == nil {
		panic(backend + ".Window: neither carried columns nor new ones")
	}
	if prev != nil {
		np = prev.Shape()[2]
		lead = np
	}
	if x != nil {
		nx = x.Shape()[2]
	}
	if lead < 0 || trail < 0 || keep < 0 || keep > lead+nx+trail {
		panic(fmt.Sprintf("%s.Window: lead %d, %d columns, trail %d, keep %d", backend, lead, nx, trail, keep))
	}
	return ref[0] * ref[1], np, nx
}
