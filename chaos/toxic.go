package chaos

import (
	"context"
	"fmt"
)

// poison is the state every toxic-based fault shares: the proxy it poisons and
// the toxics it put there.
type poison struct {
	place
	names []string
	again func(ctx context.Context) ([]string, error) // adds the same toxics again
}

func (s *poison) inject(ctx context.Context, p *Proxy, kind Kind, typ string, st Stream, toxicity float32, attrs any) error {
	if p == nil {
		return fmt.Errorf("%w: %s needs a proxy", ErrNoTarget, kind)
	}
	return s.putIn(fmt.Sprintf("%s on %s", kind, p.Name()), func() error {
		names, err := p.addToxics(ctx, kind, typ, st, toxicity, attrs)
		if err != nil {
			return err
		}
		s.names = names
		s.again = func(ctx context.Context) ([]string, error) {
			return p.addToxics(ctx, kind, typ, st, toxicity, attrs)
		}
		return nil
	})
}

// reroll takes the toxics off and puts them back, so every open connection
// rolls the toxicity dice again.
func (s *poison) reroll(ctx context.Context, p *Proxy) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.active {
		return nil
	}
	if err := s.off(ctx, p); err != nil {
		return err
	}
	s.active = false
	names, err := s.again(ctx)
	if err != nil {
		return err // off, and stays off
	}
	s.names, s.active = names, true
	return nil
}

func (s *poison) remove(ctx context.Context, p *Proxy) error {
	return s.takeOut(func() error { return s.off(ctx, p) })
}

// off removes the toxics; a failed removal leaves them on. Called with
// s.mu held, while the fault is in place.
func (s *poison) off(ctx context.Context, p *Proxy) error {
	if err := p.removeToxics(ctx, s.names); err != nil {
		return err
	}
	s.names = nil
	return nil
}

// toxicityOr1 treats an unset toxicity as "every connection".
func toxicityOr1(t float32) float32 {
	if t == 0 {
		return 1
	}
	return t
}

func streamOr(s, def Stream) Stream {
	if s == "" {
		return def
	}
	return s
}

func targetOf(p *Proxy) string {
	if p == nil {
		return ""
	}
	return p.Name()
}
