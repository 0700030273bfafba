//go:build azure

package azure

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerinstance/armcontainerinstance/v2"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// ContainerLogs is what evidence collection needs of ACI (ARM list-logs,
// what `az container logs` calls): armcontainerinstance.ContainersClient.
type ContainerLogs interface {
	ListLogs(ctx context.Context, resourceGroup, group, containerName string, o *armcontainerinstance.ContainersClientListLogsOptions) (armcontainerinstance.ContainersClientListLogsResponse, error)
}

// Containers are the container names in each group of d: the worker, and
// the chaos sidecar when the deployment has one.
func (d Deployment) Containers() []string {
	if d.SidecarImage == "" {
		return []string{"worker"}
	}
	return []string{"worker", "chaos"}
}

// CollectEvidence saves, under dir, every container's log
// (logs/<group>-<container>.log, with ACI's timestamps) and, when history is
// not nil, every worker's history blobs (history/<group>/…), before the
// teardown deletes them with the resource group and its Log Analytics
// workspace. It tries every one, whatever fails, and returns the files it
// wrote with the failures joined. ACI keeps the log of a container's current
// instance only: a container restarted by ACI has lost its earlier one.
func CollectEvidence(ctx context.Context, logs ContainerLogs, history *container.Client, d Deployment, dir string) ([]string, error) {
	var files []string
	var errs []error
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	for _, g := range d.Groups {
		for _, c := range d.Containers() {
			resp, err := logs.ListLogs(ctx, d.ResourceGroup, g, c, &armcontainerinstance.ContainersClientListLogsOptions{Timestamps: to.Ptr(true)})
			if err != nil {
				errs = append(errs, fmt.Errorf("azure: logs of %s/%s: %w", g, c, err))
				continue
			}
			content := ""
			if resp.Content != nil {
				content = *resp.Content
			}
			f := filepath.Join(dir, "logs", g+"-"+c+".log")
			if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
				errs = append(errs, err)
				continue
			}
			files = append(files, f)
		}
	}
	if history != nil {
		hf, err := DownloadHistory(ctx, history, d.Groups, filepath.Join(dir, "history"))
		files = append(files, hf...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return files, errors.Join(errs...)
}
