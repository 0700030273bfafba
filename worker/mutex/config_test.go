package mutex_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/mutex"
)

func TestConfig_ValidateNamesTheFieldAndTheRule(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*mutex.Config)
		field string
	}{
		{"defaults", func(*mutex.Config) {}, ""},
		{"empty owner", func(c *mutex.Config) { c.Owner = "" }, "Owner"},
		{"non-ASCII owner", func(c *mutex.Config) { c.Owner = "é" }, "Owner"},
		{"lease too short", func(c *mutex.Config) { c.LeaseDuration = 10 * time.Second }, "LeaseDuration"},
		{"deadline past the margin", func(c *mutex.Config) { c.RenewDeadline = 14 * time.Second }, "RenewDeadline"},
		{"retry too fast", func(c *mutex.Config) { c.RetryPeriod = time.Millisecond }, "RetryPeriod"},
		{"prefix with a trailing dot", func(c *mutex.Config) { c.Prefix = "locks." }, "Prefix"},
		{"empty prefix", func(c *mutex.Config) { c.Prefix = "" }, "Prefix"},
		{"prefix too long", func(c *mutex.Config) { c.Prefix = strings.Repeat("p", 1000) }, "Prefix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mutex.DefaultConfig("w1")
			tc.edit(&c)
			err := c.Validate()
			var ce *election.ConfigError
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("Validate = %v, want nil", err)
			case tc.field != "" && (!errors.As(err, &ce) || ce.Field != tc.field || ce.Rule == ""):
				t.Fatalf("Validate = %v, want a ConfigError naming %s and its rule", err, tc.field)
			}
		})
	}
}
