//go:build !linux

package azuritetest

// Elsewhere ReservePort falls back to a port picked free.
func reservableRange() (lo, hi int, ok bool) { return 0, 0, false }

func lockPort(int) (func(), bool) { return nil, false }
