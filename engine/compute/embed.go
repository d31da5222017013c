package compute

// EmbeddingSummer is implemented by backends that gather and add several
// embedding tables in one pass. A Zonos decode step embeds its nine-code
// column as nine lookups and eight additions, then repeats the sum for both
// guidance rows: on a GPU that was 28 small kernels before the first layer.
// Callers fall back to Embedding, Add and Concat without it.
type EmbeddingSummer interface {
	// EmbeddingSum returns Σ_k tables[k][ids[k, t]] for I32 ids [K, T]
	// (K = len(tables), every table [V, D] of one dtype), added in k order
	// exactly as a chain of Add would, as [rows, T, D] with the sum in
	// every row.
	EmbeddingSum(tables []Tensor, ids Tensor, rows int) Tensor
}
