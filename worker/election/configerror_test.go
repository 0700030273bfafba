package election

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A ConfigError carries the other fields its rule names as fields, so a
// caller shows them under its own names (the binary: flags) without
// editing the text.
func TestConfigError_RuleNamingNamesEveryFieldTheRuleNames(t *testing.T) {
	c := DefaultConfig("a")
	c.RenewInterval = 100 * time.Millisecond
	var ce *ConfigError
	if !errors.As(c.Validate(), &ce) {
		t.Fatalf("Validate = %v, want a *ConfigError", c.Validate())
	}
	got := ce.RuleNaming(func(field string) string { return "<" + field + ">" })
	want := strings.NewReplacer("RenewInterval", "<RenewInterval>", "RenewDeadline", "<RenewDeadline>").Replace(ce.Rule)
	if got != want || !strings.Contains(ce.Rule, "min(RenewInterval, RenewDeadline/3)") {
		t.Fatalf("RuleNaming = %q, want %q (Rule %q)", got, want, ce.Rule)
	}
}

// CheckIdentity is Identity's rule under the caller's field name.
func TestCheckIdentity_NamesTheCallersField(t *testing.T) {
	var ce *ConfigError
	if err := CheckIdentity("Owner", " x"); !errors.As(err, &ce) || ce.Field != "Owner" || ce.Value != `" x"` || !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("CheckIdentity(Owner, %q) = %v, want a ConfigError naming Owner", " x", err)
	}
	if err := CheckIdentity("Owner", "x"); err != nil {
		t.Fatalf("CheckIdentity(Owner, x) = %v, want nil", err)
	}
}
