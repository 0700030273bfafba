package main

// unsafeFlag names the negative control's flag in every build: the test-only
// build (negativecontrol.go) takes it, every other (buildoptions.go) refuses
// it. Either way --help does not list it.
const unsafeFlag = "unsafe-no-step-down"

// hiddenFlags are accepted but not listed by --help.
var hiddenFlags = map[string]bool{unsafeFlag: true}
