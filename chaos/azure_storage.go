package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/storage/armstorage"
)

// AzureOutage takes the storage account away from everyone: it sets the
// account's network rule default action to Deny (keeping its bypass and any
// IP or virtual network rules), so every data-plane request from the workers
// — which come from ACI's public addresses, matched by no rule — is refused
// with 403. Remove restores the rule set it found (default action Allow).
//
// Network rules take a while to apply at the storage front ends. When Probe
// is set, Inject and Remove return only once Probe sees the data plane
// refuse, then answer again.
type AzureOutage struct {
	Accounts      *armstorage.AccountsClient `json:"-"`
	ResourceGroup string                     `json:"-"`
	Account       string                     `json:"account"` // storage account name

	// Probe, if set, reports whether the data plane answers the caller now
	// (true) or refuses it (false).
	Probe      func(ctx context.Context) (reachable bool, err error) `json:"-"`
	ProbeEvery time.Duration                                         `json:"-"` // default 2 s
	// OnOp, if set, hears about each rule change ("deny", "allow") and how
	// long until the probe saw it take effect.
	OnOp func(ARMOp) `json:"-"`

	place
	saved *armstorage.NetworkRuleSet // the rules to put back, while in place
}

var _ Fault = (*AzureOutage)(nil)

func (f *AzureOutage) Kind() Kind     { return KindOutage }
func (f *AzureOutage) Target() string { return TargetAll }

// Inject saves the account's network rules and denies by default.
func (f *AzureOutage) Inject(ctx context.Context) error {
	if f.Accounts == nil || f.ResourceGroup == "" || f.Account == "" {
		return fmt.Errorf("%w: outage needs the storage account (client, resource group, name)", ErrNoTarget)
	}
	return f.putInAwaiting("outage of "+f.Account, func() (bool, error) { return f.deny(ctx) })
}

// deny makes the account deny by default, saving its rules; it reports
// whether it did, even when the wait for storage to go unreachable failed.
func (f *AzureOutage) deny(ctx context.Context) (denied bool, err error) {
	props, err := f.Accounts.GetProperties(ctx, f.ResourceGroup, f.Account, nil)
	if err != nil {
		return false, fmt.Errorf("chaos: read storage account %s: %w", f.Account, err)
	}
	saved := &armstorage.NetworkRuleSet{DefaultAction: to(armstorage.DefaultActionAllow)}
	if p := props.Properties; p != nil && p.NetworkRuleSet != nil {
		saved = p.NetworkRuleSet
	}
	if saved.DefaultAction != nil && *saved.DefaultAction == armstorage.DefaultActionDeny {
		return false, fmt.Errorf("%w: storage account %s already denies by default; an outage would change nothing", ErrInvalid, f.Account)
	}
	deny := *saved
	deny.DefaultAction = to(armstorage.DefaultActionDeny)
	err = timeOp(f.OnOp, "deny", f.Account, func() error {
		if err := f.update(ctx, &deny); err != nil {
			return err
		}
		f.saved, denied = saved, true
		return f.waitReachable(ctx, false)
	})
	return denied, err
}

// Remove puts the saved rule set back.
func (f *AzureOutage) Remove(ctx context.Context) error {
	return f.takeOutAwaiting(func() (allowed bool, err error) {
		err = timeOp(f.OnOp, "allow", f.Account, func() error {
			if err := f.update(ctx, f.saved); err != nil {
				return err
			}
			f.saved, allowed = nil, true
			return f.waitReachable(ctx, true)
		})
		return allowed, err
	})
}

func (f *AzureOutage) update(ctx context.Context, rules *armstorage.NetworkRuleSet) error {
	_, err := f.Accounts.Update(ctx, f.ResourceGroup, f.Account, armstorage.AccountUpdateParameters{
		Properties: &armstorage.AccountPropertiesUpdateParameters{NetworkRuleSet: rules},
	}, nil)
	if err != nil {
		return fmt.Errorf("chaos: set network rules of %s (default %s): %w", f.Account, deref(rules.DefaultAction), err)
	}
	return nil
}

func (f *AzureOutage) waitReachable(ctx context.Context, want bool) error {
	if f.Probe == nil {
		return nil
	}
	every := f.ProbeEvery
	if every <= 0 {
		every = 2 * time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	var last error
	for {
		got, err := f.Probe(ctx)
		if err == nil && got == want {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("chaos: storage account %s still reachable=%v after the rule change (last probe error: %v): %w", f.Account, !want, last, ctx.Err())
		case <-tick.C:
		}
	}
}

func to[T any](v T) *T { return &v }

func deref[T any](p *T) any {
	if p == nil {
		return "<nil>"
	}
	return *p
}
