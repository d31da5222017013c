package dac_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"zonostream/engine/dac"
	"zonostream/internal/golden"
)

// TestConfigJSON: Config.JSON is read back by ParseConfig to the same
// config, for dac_44khz and the tiny golden one (whose stored hidden_size
// is not the derived one), and holds the hub file's keys.
func TestConfigJSON(t *testing.T) {
	tiny, err := dac.LoadConfig(golden.Pack(t, "dac-tiny") + "/config.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []dac.Config{dac.Dac44kHz(), tiny} {
		js, err := c.JSON()
		if err != nil {
			t.Fatal(err)
		}
		back, err := dac.ParseConfig(js)
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		if !reflect.DeepEqual(back, c) {
			t.Errorf("round trip: %+v, want %+v", back, c)
		}
		var keys map[string]any
		if err := json.Unmarshal(js, &keys); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"model_type", "architectures", "hidden_size", "hop_length", "sampling_rate", "upsampling_ratios"} {
			if _, ok := keys[k]; !ok {
				t.Errorf("config.json lacks %q:\n%s", k, js)
			}
		}
	}
	bad := dac.Dac44kHz()
	bad.NCodebooks = 0
	if _, err := bad.JSON(); err == nil {
		t.Error("an invalid config was rendered")
	}
}
