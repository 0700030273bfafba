package chaos

import (
	"fmt"
	"sync"
)

// place is whether a fault is in place, with the lock that orders its
// Inject and Remove. Every fault embeds one, directly or through the
// plumbing its kind shares (signalled, poison, intercept), so that the
// contract of Fault — inject once (ErrInjected while in place), remove only
// what is in place — is written once.
type place struct {
	mu     sync.Mutex
	active bool
}

// putIn runs act under the lock unless the fault is in place already
// (ErrInjected, naming what when it is not empty); the fault is in place
// once act returns nil.
func (p *place) putIn(what string, act func() error) error {
	return p.putInAwaiting(what, func() (bool, error) {
		if err := act(); err != nil {
			return false, err
		}
		return true, nil
	})
}

// putInAwaiting is putIn for an act that can fail after it put the fault in
// place (a signal sent, its effect not yet seen): the fault is in place
// when act says so, whatever act returns.
func (p *place) putInAwaiting(what string, act func() (placed bool, err error)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.active {
		if what != "" {
			return fmt.Errorf("%w: %s", ErrInjected, what)
		}
		return ErrInjected
	}
	placed, err := act()
	p.active = placed
	return err
}

// takeOut runs undo under the lock if the fault is in place (nothing
// otherwise); it is out of place once undo returns nil. A nil undo has
// nothing to undo.
func (p *place) takeOut(undo func() error) error {
	return p.takeOutAwaiting(func() (bool, error) {
		if undo == nil {
			return true, nil
		}
		if err := undo(); err != nil {
			return false, err
		}
		return true, nil
	})
}

// takeOutAwaiting is takeOut for an undo that decides itself whether the
// fault is out of place, whatever it returns (forgotten first, or gone
// with the process it was on).
func (p *place) takeOutAwaiting(undo func() (removed bool, err error)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.active {
		return nil
	}
	removed, err := undo()
	if removed {
		p.active = false
	}
	return err
}
