package chaos

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/storage/armstorage"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/storage/armstorage/fake"
)

// fakeAccount is one storage account's network rules behind the ARM fake.
type fakeAccount struct {
	mu      sync.Mutex
	rules   armstorage.NetworkRuleSet
	updates []armstorage.DefaultAction
}

func (a *fakeAccount) client(t *testing.T) *armstorage.AccountsClient {
	t.Helper()
	srv := fake.AccountsServer{
		GetProperties: func(_ context.Context, rg, name string, _ *armstorage.AccountsClientGetPropertiesOptions) (resp azfake.Responder[armstorage.AccountsClientGetPropertiesResponse], errResp azfake.ErrorResponder) {
			if rg != "rg-test" || name != "sttest" {
				errResp.SetResponseError(http.StatusNotFound, "ResourceNotFound")
				return
			}
			a.mu.Lock()
			rules := a.rules
			a.mu.Unlock()
			var r armstorage.AccountsClientGetPropertiesResponse
			r.Name = &name
			r.Properties = &armstorage.AccountProperties{NetworkRuleSet: &rules}
			resp.SetResponse(http.StatusOK, r, nil)
			return
		},
		Update: func(_ context.Context, rg, name string, p armstorage.AccountUpdateParameters, _ *armstorage.AccountsClientUpdateOptions) (resp azfake.Responder[armstorage.AccountsClientUpdateResponse], errResp azfake.ErrorResponder) {
			if rg != "rg-test" || name != "sttest" || p.Properties == nil || p.Properties.NetworkRuleSet == nil {
				errResp.SetResponseError(http.StatusBadRequest, "InvalidRequest")
				return
			}
			a.mu.Lock()
			a.rules = *p.Properties.NetworkRuleSet
			a.updates = append(a.updates, *a.rules.DefaultAction)
			a.mu.Unlock()
			resp.SetResponse(http.StatusOK, armstorage.AccountsClientUpdateResponse{}, nil)
			return
		},
	}
	c, err := armstorage.NewAccountsClient("00000000-0000-0000-0000-000000000000", &azfake.TokenCredential{},
		&arm.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: fake.NewAccountsServerTransport(&srv)}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (a *fakeAccount) snapshot() (armstorage.NetworkRuleSet, []armstorage.DefaultAction) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rules, append([]armstorage.DefaultAction(nil), a.updates...)
}

func TestOffline_AzureOutageDeniesThenRestoresTheRules(t *testing.T) {
	acct := &fakeAccount{rules: armstorage.NetworkRuleSet{
		DefaultAction: to(armstorage.DefaultActionAllow),
		Bypass:        to(armstorage.BypassAzureServices),
		IPRules:       []*armstorage.IPRule{{IPAddressOrRange: to("203.0.113.7")}},
	}}
	// The probe sees what the storage front end would, one look late (rules
	// apply a while after ARM accepts them): refused once a Deny has applied.
	var mu sync.Mutex
	var probes int
	applied := true // reachable as of the previous look
	probe := func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		probes++
		r, _ := acct.snapshot()
		seen := applied
		applied = *r.DefaultAction != armstorage.DefaultActionDeny
		return seen, nil
	}
	f := &AzureOutage{Accounts: acct.client(t), ResourceGroup: "rg-test", Account: "sttest", Probe: probe, ProbeEvery: time.Millisecond}
	if f.Kind() != KindOutage || f.Target() != TargetAll {
		t.Fatalf("kind %s target %q, want outage on all", f.Kind(), f.Target())
	}
	ctx := testCtx(t, 10*time.Second)
	if err := f.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	rules, updates := acct.snapshot()
	if *rules.DefaultAction != armstorage.DefaultActionDeny || *rules.Bypass != armstorage.BypassAzureServices ||
		len(rules.IPRules) != 1 || *rules.IPRules[0].IPAddressOrRange != "203.0.113.7" {
		t.Fatalf("during the outage the rules are %+v, want Deny keeping bypass and IP rules", rules)
	}
	if err := f.Inject(ctx); !errors.Is(err, ErrInjected) {
		t.Fatalf("second Inject: %v, want ErrInjected", err)
	}
	mu.Lock()
	if probes < 2 {
		t.Errorf("Inject returned after %d probe(s); it must wait until the denial is seen", probes)
	}
	mu.Unlock()
	if err := f.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	rules, updates = acct.snapshot()
	if *rules.DefaultAction != armstorage.DefaultActionAllow || len(rules.IPRules) != 1 {
		t.Fatalf("after Remove the rules are %+v, want the original Allow set", rules)
	}
	if len(updates) != 2 || updates[0] != armstorage.DefaultActionDeny || updates[1] != armstorage.DefaultActionAllow {
		t.Fatalf("updates %v, want [Deny Allow]", updates)
	}
	if err := f.Remove(ctx); err != nil {
		t.Fatalf("Remove of a removed outage: %v", err)
	}
	if _, updates = acct.snapshot(); len(updates) != 2 {
		t.Fatalf("a second Remove changed the rules again: %v", updates)
	}
}

func TestOffline_AzureOutageRefusesAnAccountThatAlreadyDenies(t *testing.T) {
	acct := &fakeAccount{rules: armstorage.NetworkRuleSet{DefaultAction: to(armstorage.DefaultActionDeny)}}
	f := &AzureOutage{Accounts: acct.client(t), ResourceGroup: "rg-test", Account: "sttest"}
	if err := f.Inject(testCtx(t, 5*time.Second)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Inject on a denying account: %v, want ErrInvalid", err)
	}
	if _, updates := acct.snapshot(); len(updates) != 0 {
		t.Fatalf("the rules were changed: %v", updates)
	}
}

func TestOffline_AzureOutageProbeHonoursTheDeadline(t *testing.T) {
	acct := &fakeAccount{rules: armstorage.NetworkRuleSet{DefaultAction: to(armstorage.DefaultActionAllow)}}
	never := func(context.Context) (bool, error) { return true, nil } // storage keeps answering
	f := &AzureOutage{Accounts: acct.client(t), ResourceGroup: "rg-test", Account: "sttest", Probe: never, ProbeEvery: time.Millisecond}
	if err := f.Inject(testCtx(t, 50*time.Millisecond)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Inject whose probe never sees the denial: %v, want a deadline error", err)
	}
	// The rule change happened and is remembered, so a cleanup restores it.
	if err := f.Remove(testCtx(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if r, _ := acct.snapshot(); *r.DefaultAction != armstorage.DefaultActionAllow {
		t.Fatalf("after Remove: %s, want Allow", *r.DefaultAction)
	}
}

func TestOffline_AzureOutageNeedsAnAccount(t *testing.T) {
	if err := (&AzureOutage{}).Inject(testCtx(t, time.Second)); !errors.Is(err, ErrNoTarget) {
		t.Fatalf("outage without an account: %v, want ErrNoTarget", err)
	}
}
