package chaos

import (
	"context"
	"crypto/rand"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
)

// TestSlowIdentity: through the real ManagedIdentityCredential, a cold
// endpoint gives no token to a caller bounded like one storage request (2 s),
// gives one to a patient caller after Delay, and answers at once when removed.
func TestSlowIdentity(t *testing.T) {
	f := &SlowIdentity{Delay: 3000, Worker: "w1", Header: "secret"}
	srv := httptest.NewServer(f)
	defer srv.Close()
	t.Setenv("IDENTITY_ENDPOINT", srv.URL+"/msi/token")
	t.Setenv("IDENTITY_HEADER", "secret")
	// MSAL caches managed-identity tokens for the whole process, by client
	// ID and scope, whatever the endpoint: a client ID of this run's own
	// keeps a token an earlier run (-count) cached from answering for the
	// cold endpoint.
	clientID := azidentity.ClientID("client-" + rand.Text())
	newCred := func() *azidentity.ManagedIdentityCredential {
		cred, err := azidentity.NewManagedIdentityCredential(&azidentity.ManagedIdentityCredentialOptions{ID: clientID})
		if err != nil {
			t.Fatal(err)
		}
		return cred
	}
	scope := policy.TokenRequestOptions{Scopes: []string{"https://storage.azure.com/.default"}}
	ctx := context.Background()
	if err := f.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.Inject(ctx); err == nil {
		t.Error("a second Inject must fail with ErrInjected")
	}

	bounded, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, err := newCred().GetToken(bounded, scope)
	cancel()
	if err == nil || f.Delivered() != 0 {
		t.Fatalf("a 2 s caller got a token from a cold endpoint (err %v, delivered %d)", err, f.Delivered())
	}
	start := time.Now()
	patient, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := newCred().GetToken(patient, scope); err != nil {
		t.Fatalf("a patient caller got no token: %v", err)
	}
	if took := time.Since(start); took < 3*time.Second {
		t.Errorf("the cold endpoint answered after %v, want ≥ 3 s", took)
	}

	if err := f.Inject(ctx); err == nil {
		t.Error("Inject while injected must fail")
	}
	if err := f.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.Inject(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	quick, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := newCred().GetToken(quick, scope); err != nil {
		t.Fatalf("after Remove the endpoint must answer at once: %v (after %v)", err, time.Since(start))
	}
	if err := (&SlowIdentity{Worker: "w1"}).Inject(ctx); err == nil {
		t.Error("a zero delay must be refused")
	}
}
