package zonos

// MLPRows is the fc1 height of layer i's bound MLP, 0 when it has none.
func (m *Model) MLPRows(i int) int {
	if mlp := m.layers[i].mlp; mlp != nil {
		return mlp.fc1.Shape()[0]
	}
	return 0
}
