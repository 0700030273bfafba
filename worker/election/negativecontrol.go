//go:build negativecontrol

package election

// EnableUnsafeNoStepDown switches on the negative control in c: a leader
// built from it ignores its renew deadline and definite lease losses, keeps
// claiming leadership, and publishes no ValidUntil. It exists only so the
// chaos suite can prove that its checker catches an unsafe elector.
//
// It is compiled only under the negativecontrol build tag (go build -tags
// negativecontrol): a production build has no way to disable safety.
func EnableUnsafeNoStepDown(c *Config) { c.unsafeNoStepDown = true }
