package compute

// RowViewer is an optional interface of backends that can view a tensor's
// leading rows in place: a batch whose utterances occupy its first rows
// then runs its steps on a view of just those rows, at the cost of those
// rows, while its caches stay one allocation (zonos.Batch's tiers).
type RowViewer interface {
	// Rows is the first n entries of t's axis 0 as a tensor that shares
	// t's storage: what is written through either is read through both.
	// Freeing the view leaves t's storage to t.
	Rows(t Tensor, n int) Tensor
}
