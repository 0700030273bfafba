//go:build !linux

package azuritetest

// prioritize does nothing off Linux: the server runs at the ordinary
// priority.
func prioritize(int) {}
