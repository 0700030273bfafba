package main

import "testing"

func TestParseShardScale(t *testing.T) {
	if n, m, err := parseShardScale("256x10"); err != nil || n != 256 || m != 10 {
		t.Errorf(`parseShardScale("256x10") = %d, %d, %v; want 256, 10, nil`, n, m, err)
	}
	for _, bad := range []string{"", "5", "0x3", "16x1", "x3", "16x", "ax3", "16x3x2"} {
		if _, _, err := parseShardScale(bad); err == nil {
			t.Errorf("parseShardScale(%q): want an error", bad)
		}
	}
}
