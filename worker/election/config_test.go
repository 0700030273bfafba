package election

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/worker/election/electiontest"
)

func TestConfig_Validate(t *testing.T) {
	t.Parallel()
	ok := DefaultConfig("w1")
	tests := []struct {
		name      string
		mutate    func(c *Config)
		wantField string // "" means valid
	}{
		{"defaults are valid", func(c *Config) {}, ""},
		{"identity empty", func(c *Config) { c.Identity = "" }, "Identity"},
		// The identity travels as a metadata value (an HTTP header): storage
		// refuses what a header cannot carry, and the term write fails for ever.
		{"identity non-ASCII", func(c *Config) { c.Identity = "wörker-ü" }, "Identity"},
		{"identity with a tab", func(c *Config) { c.Identity = "w\t1" }, "Identity"},
		{"identity with a newline", func(c *Config) { c.Identity = "w1\nx-ms-meta-term: 99" }, "Identity"},
		{"identity with DEL", func(c *Config) { c.Identity = "w\x7f1" }, "Identity"},
		{"identity with a leading space", func(c *Config) { c.Identity = " w1" }, "Identity"},
		{"identity with a trailing space", func(c *Config) { c.Identity = "w1 " }, "Identity"},
		{"identity only a space", func(c *Config) { c.Identity = " " }, "Identity"},
		{"identity with an inner space", func(c *Config) { c.Identity = "web 1" }, ""},
		{"identity of printable ASCII", func(c *Config) { c.Identity = "w-1_a.b:c/d@e~!#$%&'()*+,;=?[]{}|<>\"`^" }, ""},
		{"identity of MaxIdentityLength bytes", func(c *Config) { c.Identity = strings.Repeat("a", MaxIdentityLength) }, ""},
		{"identity one byte too long", func(c *Config) { c.Identity = strings.Repeat("a", MaxIdentityLength+1) }, "Identity"},
		{"identity of 9000 bytes (over Azure's 8 KiB of metadata)", func(c *Config) { c.Identity = strings.Repeat("a", 9000) }, "Identity"},
		{"lease just below 15s", func(c *Config) { c.LeaseDuration = 15*time.Second - time.Nanosecond }, "LeaseDuration"},
		{"lease 5s", func(c *Config) { c.LeaseDuration = 5 * time.Second }, "LeaseDuration"},
		{"lease exactly 15s", func(c *Config) { c.LeaseDuration = 15 * time.Second }, ""},
		{"lease exactly 60s", func(c *Config) { c.LeaseDuration = 60 * time.Second }, ""},
		{"lease just above 60s", func(c *Config) { c.LeaseDuration = 60*time.Second + time.Nanosecond }, "LeaseDuration"},
		{"lease 15.9s is not whole seconds", func(c *Config) { c.LeaseDuration = 15900 * time.Millisecond }, "LeaseDuration"},
		{"lease 15s + 1ns is not whole seconds", func(c *Config) { c.LeaseDuration = 15*time.Second + time.Nanosecond }, "LeaseDuration"},
		{"lease infinite (-1)", func(c *Config) { c.LeaseDuration = -1 }, "LeaseDuration"},
		{"deadline zero", func(c *Config) { c.RenewDeadline = 0 }, "RenewDeadline"},
		{"deadline equal to L-2s", func(c *Config) { c.RenewDeadline = 13 * time.Second }, "RenewDeadline"},
		{"deadline just below L-2s", func(c *Config) { c.RenewDeadline = 13*time.Second - time.Nanosecond }, ""},
		{"deadline above L", func(c *Config) { c.RenewDeadline = 20 * time.Second }, "RenewDeadline"},
		{"renew interval zero", func(c *Config) { c.RenewInterval = 0 }, "RenewInterval"},
		{"request timeout below the floor (renew interval 50ms)", func(c *Config) { c.RenewInterval = 50 * time.Millisecond }, "RenewInterval"},
		{"request timeout below the floor (deadline 1.2s)", func(c *Config) { c.RenewDeadline, c.RenewInterval = 1200*time.Millisecond, 400*time.Millisecond }, "RenewInterval"},
		{"request timeout exactly the floor", func(c *Config) { c.RenewDeadline, c.RenewInterval = 1500*time.Millisecond, 500*time.Millisecond }, ""},
		{"renew interval exactly D/3", func(c *Config) { c.RenewInterval = c.RenewDeadline / 3 }, ""},
		{"renew interval just above D/3", func(c *Config) { c.RenewInterval = c.RenewDeadline/3 + time.Nanosecond }, "RenewInterval"},
		{"retry period zero", func(c *Config) { c.RetryPeriod = 0 }, "RetryPeriod"},
		{"retry period negative", func(c *Config) { c.RetryPeriod = -time.Second }, "RetryPeriod"},
		{"retry period 1ns", func(c *Config) { c.RetryPeriod = time.Nanosecond }, "RetryPeriod"},
		{"retry period just below the floor", func(c *Config) { c.RetryPeriod = 500*time.Millisecond - time.Nanosecond }, "RetryPeriod"},
		{"retry period exactly the floor (the fast profile's)", func(c *Config) { c.RetryPeriod = 500 * time.Millisecond }, ""},
		{"watchdog off", func(c *Config) { c.WatchdogTimeout = 0 }, ""},
		{"watchdog negative", func(c *Config) { c.WatchdogTimeout = -time.Second }, "WatchdogTimeout"},
		{"watchdog just below renew interval", func(c *Config) { c.WatchdogTimeout = c.RenewInterval - time.Nanosecond }, "WatchdogTimeout"},
		{"watchdog equal to renew interval", func(c *Config) { c.WatchdogTimeout = c.RenewInterval }, ""},
		{"shutdown grace negative", func(c *Config) { c.ShutdownGrace = -time.Nanosecond }, "ShutdownGrace"},
		{"shutdown grace zero", func(c *Config) { c.ShutdownGrace = 0 }, ""},
		{"observe every zero", func(c *Config) { c.ObserveEvery = 0 }, "ObserveEvery"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mutate(&c)
			err := c.Validate()
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("Validate() = %v, want a *ConfigError naming %s", err, tt.wantField)
			}
			if ce.Field != tt.wantField {
				t.Fatalf("Validate() names field %q (%v), want %q", ce.Field, err, tt.wantField)
			}
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.wantField) {
				t.Fatalf("error %q should wrap ErrInvalidConfig and name %s", err, tt.wantField)
			}
		})
	}
}

func TestConfig_RequestTimeout(t *testing.T) {
	t.Parallel()
	c := DefaultConfig("w1")
	if got := c.RequestTimeout(); got != 2*time.Second {
		t.Fatalf("defaults: RequestTimeout() = %s, want min(2s, 10s/3) = 2s", got)
	}
	c.RenewInterval, c.RenewDeadline = 3*time.Second, 6*time.Second
	if got := c.RequestTimeout(); got != 2*time.Second {
		t.Fatalf("RequestTimeout() = %s, want D/3 = 2s", got)
	}
}

func TestNewElector_RejectsInvalidConfig(t *testing.T) {
	t.Parallel()
	c := DefaultConfig("")
	if _, err := NewElector(c, electiontest.NewStore().NewLock("x"), Callbacks{}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("NewElector with empty identity = %v, want ErrInvalidConfig", err)
	}
	if _, err := NewElector(DefaultConfig("a"), nil, Callbacks{}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("NewElector with nil lock = %v, want ErrInvalidConfig", err)
	}
}

// The negative control must not be reachable from a production build: no
// exported Config field may switch safety off (it is compiled in only under
// the negativecontrol build tag; see negativecontrol.go).
func TestConfig_NoExportedFieldDisablesSafety(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeFor[Config]()
	for i := range typ.NumField() {
		if f := typ.Field(i); f.IsExported() && strings.Contains(strings.ToLower(f.Name), "unsafe") {
			t.Errorf("Config.%s is exported: any library user could switch the negative control on", f.Name)
		}
	}
}
