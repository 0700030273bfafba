//go:build azure

package azure

import (
	"regexp"
	"testing"
)

// TestOffline_OnlyPropagationErrorsAreRetried: terratest retries an apply
// whose output matches one of TerraformOptions' patterns. A role that is
// missing for the deployer (AuthorizationFailed) never appears by waiting, so
// retrying it only burns MaxRetries × TimeBetweenRetries before the failure;
// a principal or an AcrPull assignment that is still propagating does.
func TestOffline_OnlyPropagationErrorsAreRetried(t *testing.T) {
	opts := TerraformOptions(Env{}, t.TempDir(), nil)
	retried := func(out string) bool {
		for pattern := range opts.RetryableTerraformErrors {
			if regexp.MustCompile(pattern).MatchString(out) {
				return true
			}
		}
		return false
	}
	for _, tc := range []struct {
		name, out string
		want      bool
	}{
		{"deployer lacks a role", `Error: creating Role Assignment: unexpected status 403 (403 Forbidden) with error: AuthorizationFailed: The client 'x' with object id 'y' does not have authorization to perform action 'Microsoft.Authorization/roleAssignments/write' over scope '/subscriptions/s/resourceGroups/rg'`, false},
		{"new identity not replicated yet", `Error: creating Role Assignment: unexpected status 400 (400 Bad Request) with error: PrincipalNotFound: Principal 1234 does not exist in the directory`, true},
		{"AcrPull still propagating", `Error: creating Container Group: InaccessibleImage: The image 'cr.azurecr.io/blobleader/worker@sha256:ab' in container group is not accessible.`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := retried(tc.out); got != tc.want {
				t.Errorf("retried = %v, want %v for:\n%s", got, tc.want, tc.out)
			}
		})
	}
}
