package zonos

// Unknown marks a delayed-grid cell not yet generated (generate()'s -1).
const Unknown = -1

// ApplyDelay lays frames (codes[t][k]) out in the delayed grid: codebook k
// moves k+1 positions right, the gaps hold MASK, and the grid is 9 columns
// wider than the input (codebook_pattern.apply_delay_pattern).
func ApplyDelay(codes [][NumCodebooks]int32) [][NumCodebooks]int32 {
	W := len(codes) + NumCodebooks
	grid := make([][NumCodebooks]int32, W)
	for t := range grid {
		for k := 0; k < NumCodebooks; k++ {
			src := t - k - 1
			if src >= 0 && src < len(codes) {
				grid[t][k] = codes[src][k]
			} else {
				grid[t][k] = MASK
			}
		}
	}
	return grid
}

// RevertDelay undoes ApplyDelay: frame t takes codebook k from column t+k+1
// (codebook_pattern.revert_delay_pattern), giving len(grid)−9 frames.
func RevertDelay(grid [][NumCodebooks]int32) [][NumCodebooks]int32 {
	n := len(grid) - NumCodebooks
	if n <= 0 {
		return nil
	}
	out := make([][NumCodebooks]int32, n)
	for t := range out {
		for k := 0; k < NumCodebooks; k++ {
			out[t][k] = grid[t+k+1][k]
		}
	}
	return out
}

// frameAt reverts one frame t from the grid, mapping EOS/MASK (≥ 1024) to 0
// as generate() does before returning codes.
func frameAt(grid [][NumCodebooks]int32, t int) [NumCodebooks]int32 {
	var f [NumCodebooks]int32
	for k := range f {
		v := grid[t+k+1][k]
		if v >= CodebookSize {
			v = 0
		}
		f[k] = v
	}
	return f
}
