//go:build azure

package azure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v3"
)

// The tags every resource of a suite run carries (TerraformVars): teardown
// finds a run's resource group by them when the Terraform state is gone
// (docs/testing-on-azure.md, "What is cleaned up").
const (
	TagPurpose   = "purpose"
	SuitePurpose = "blobleader-azure-suite"
	TagRun       = "run"
)

// EnvReplace=1 lets a deploy start although the work directory holds the
// state of a deployment that still has resources: that state is moved aside
// (kept, never deleted) and its resource group is left for
// `make test-azure-teardown BLOBLEADER_AZURE_RUN=<run>`.
const EnvReplace = "BLOBLEADER_AZURE_REPLACE"

// EnvRun names the run `make test-azure-teardown` removes by its tags when
// the work directory has neither state nor saved options.
const EnvRun = "BLOBLEADER_AZURE_RUN"

// ErrLiveState is returned when a deploy would start over a live state.
var ErrLiveState = errors.New("azure: the work directory holds the state of a live deployment")

// LiveState reports the resources in tfDir's Terraform state (zero when
// there is no state, or an empty one after a destroy).
func LiveState(tfDir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(tfDir, "terraform.tfstate"))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var st struct {
		Resources []json.RawMessage `json:"resources"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return 0, fmt.Errorf("azure: %s/terraform.tfstate: %w", tfDir, err)
	}
	return len(st.Resources), nil
}

// PrepareWorkDir readies work for a new deployment without ever losing a
// live state: with none, it clears tfDir (the reports and histories of
// earlier runs stay); with one, it refuses, unless replace, in which case
// the state is moved to work/abandoned-<UTC time>/ and its path returned.
func PrepareWorkDir(work, tfDir string, replace bool, now time.Time) (moved string, err error) {
	n, err := LiveState(tfDir)
	if err != nil {
		return "", err
	}
	if n > 0 {
		if !replace {
			return "", fmt.Errorf("%w (%d resources in %s): run `make test-azure-teardown` first, or set %s=1 to keep that state aside and leave its resources for a teardown by tag",
				ErrLiveState, n, filepath.Join(tfDir, "terraform.tfstate"), EnvReplace)
		}
		moved = filepath.Join(work, "abandoned-"+now.UTC().Format("20060102T150405"))
		if err := os.Rename(tfDir, moved); err != nil {
			return "", err
		}
	}
	if err := errors.Join(os.RemoveAll(tfDir), os.Remove(filepath.Join(work, "deployment.json"))); err != nil && !errors.Is(err, os.ErrNotExist) {
		return moved, err
	}
	return moved, os.MkdirAll(tfDir, 0o755)
}

// TeardownByTags deletes every resource group tagged with the suite's
// purpose and run (ARM lists by one tag; the purpose is checked on each),
// waiting for each deletion, and returns the names it deleted. Deleting a
// resource group deletes everything in it; role assignments scoped inside
// it go with it.
func TeardownByTags(ctx context.Context, groups *armresources.ResourceGroupsClient, run string, logf func(string, ...any)) ([]string, error) {
	if run == "" {
		return nil, errors.New("azure: teardown by tags needs the run's id")
	}
	filter := fmt.Sprintf("tagName eq '%s' and tagValue eq '%s'", TagRun, run)
	var names []string
	pager := groups.NewListPager(&armresources.ResourceGroupsClientListOptions{Filter: &filter})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return names, fmt.Errorf("azure: list resource groups tagged %s=%s: %w", TagRun, run, err)
		}
		for _, g := range page.Value {
			if g == nil || g.Name == nil || g.Tags[TagPurpose] == nil || *g.Tags[TagPurpose] != SuitePurpose ||
				g.Tags[TagRun] == nil || *g.Tags[TagRun] != run {
				continue // not ours, whatever the filter let through
			}
			names = append(names, *g.Name)
		}
	}
	var errs []error
	var deleted []string
	for _, name := range names {
		logf("teardown: deleting resource group %s (tagged %s=%s)", name, TagRun, run)
		poller, err := groups.BeginDelete(ctx, name, nil)
		if err == nil {
			_, err = poller.PollUntilDone(ctx, nil)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("azure: delete resource group %s: %w", name, err))
			continue
		}
		deleted = append(deleted, name)
	}
	return deleted, errors.Join(errs...)
}
