//go:build azure

package azure

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v3"
	rgfake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v3/fake"
)

// TestOffline_TeardownByTagsWithStateRemoved: a run whose Terraform state is
// gone (the work directory removed, a ^C before the state was written) is
// still removed, by its tags, and nothing else is: not another run's group,
// not a group that only shares the run tag.
func TestOffline_TeardownByTagsWithStateRemoved(t *testing.T) {
	groups := map[string]map[string]*string{
		"rg-blobleader-test-abc123": {TagPurpose: to.Ptr(SuitePurpose), TagRun: to.Ptr("abc123"), "project": to.Ptr("blobleader")},
		"rg-blobleader-test-xyz789": {TagPurpose: to.Ptr(SuitePurpose), TagRun: to.Ptr("xyz789")},
		"rg-someone-else":           {TagRun: to.Ptr("abc123")},
		"rg-untagged":               nil,
	}
	var mu sync.Mutex
	var filters, deleted []string
	srv := rgfake.ResourceGroupsServer{
		NewListPager: func(o *armresources.ResourceGroupsClientListOptions) (resp azfake.PagerResponder[armresources.ResourceGroupsClientListResponse]) {
			mu.Lock()
			defer mu.Unlock()
			f := ""
			if o != nil && o.Filter != nil {
				f = *o.Filter
			}
			filters = append(filters, f)
			// ARM's tag filter: one tag name and value.
			var page armresources.ResourceGroupListResult
			for name, tags := range groups {
				if v := tags[TagRun]; f == "" || (v != nil && f == "tagName eq 'run' and tagValue eq '"+*v+"'") {
					page.Value = append(page.Value, &armresources.ResourceGroup{Name: to.Ptr(name), Tags: tags})
				}
			}
			resp.AddPage(http.StatusOK, armresources.ResourceGroupsClientListResponse{ResourceGroupListResult: page}, nil)
			return
		},
		BeginDelete: func(_ context.Context, name string, _ *armresources.ResourceGroupsClientBeginDeleteOptions) (resp azfake.PollerResponder[armresources.ResourceGroupsClientDeleteResponse], errResp azfake.ErrorResponder) {
			mu.Lock()
			defer mu.Unlock()
			deleted = append(deleted, name)
			resp.AddNonTerminalResponse(http.StatusAccepted, nil)
			resp.SetTerminalResponse(http.StatusOK, armresources.ResourceGroupsClientDeleteResponse{}, nil)
			return
		},
	}
	client, err := armresources.NewResourceGroupsClient("00000000-0000-0000-0000-000000000000", &azfake.TokenCredential{},
		&arm.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: rgfake.NewResourceGroupsServerTransport(&srv)}})
	if err != nil {
		t.Fatal(err)
	}

	// The state is gone: nothing in the work directory at all.
	work := t.TempDir()
	if n, err := LiveState(filepath.Join(work, "infra")); err != nil || n != 0 {
		t.Fatalf("LiveState of a removed state = %d, %v", n, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := TeardownByTags(ctx, client, "abc123", t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"rg-blobleader-test-abc123"}; !slices.Equal(got, want) || !slices.Equal(deleted, want) {
		t.Errorf("deleted %v (reported %v), want exactly %v", deleted, got, want)
	}
	if len(filters) != 1 || filters[0] != "tagName eq 'run' and tagValue eq 'abc123'" {
		t.Errorf("listed with filters %q, want one by the run tag", filters)
	}
	if _, err := TeardownByTags(ctx, client, "", t.Logf); err == nil {
		t.Error("a teardown by tags without a run id must refuse (it would match every run)")
	}
}

// TestOffline_DeployNeverStartsOverALiveState: the documented loop
// (SKIP_teardown=1 make test-azure, then make test-azure) must not lose the
// first run's state: the second deploy refuses, or with EnvReplace keeps the
// state aside; an empty state (after a destroy) is cleared as before.
func TestOffline_DeployNeverStartsOverALiveState(t *testing.T) {
	work := t.TempDir()
	tfDir := filepath.Join(work, "infra")
	if err := os.MkdirAll(tfDir, 0o755); err != nil {
		t.Fatal(err)
	}
	live := `{"version":4,"resources":[{"type":"azurerm_resource_group","name":"this"}]}`
	if err := os.WriteFile(filepath.Join(tfDir, "terraform.tfstate"), []byte(live), 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 24, 19, 0, 0, 0, time.UTC)
	if _, err := PrepareWorkDir(work, tfDir, false, now); !errors.Is(err, ErrLiveState) {
		t.Fatalf("PrepareWorkDir over a live state = %v, want ErrLiveState", err)
	}
	if b, err := os.ReadFile(filepath.Join(tfDir, "terraform.tfstate")); err != nil || string(b) != live {
		t.Fatalf("the live state was touched: %q, %v", b, err)
	}
	moved, err := PrepareWorkDir(work, tfDir, true, now)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(moved, "terraform.tfstate")); err != nil || string(b) != live {
		t.Fatalf("with %s=1 the state must be kept in %s: %q, %v", EnvReplace, moved, b, err)
	}
	if n, _ := LiveState(tfDir); n != 0 {
		t.Errorf("after the move the new work directory still has %d resources", n)
	}
	// A destroyed deployment leaves an empty state: cleared without asking.
	if err := os.WriteFile(filepath.Join(tfDir, "terraform.tfstate"), []byte(`{"version":4,"resources":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := PrepareWorkDir(work, tfDir, false, now); err != nil {
		t.Errorf("an empty state must not block a deploy: %v", err)
	}
}

// TestOffline_TerraformVarsTagTheRun: every resource gets the run's tags
// (infra/ puts var.tags on each taggable resource; terraform test checks
// that), so the run's tag must be in the variables.
func TestOffline_TerraformVarsTagTheRun(t *testing.T) {
	vars, err := TerraformVars(Env{Location: "swedencentral", Workers: 3}, "abc123", "op", nil)
	if err != nil {
		t.Fatal(err)
	}
	tags, _ := vars["tags"].(map[string]string)
	if tags[TagRun] != "abc123" || tags[TagPurpose] != SuitePurpose {
		t.Errorf("tags = %v, want %s=abc123 and %s=%s", tags, TagRun, TagPurpose, SuitePurpose)
	}
}
