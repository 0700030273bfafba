//go:build azure

package azure

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerinstance/armcontainerinstance/v2"
	acifake "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerinstance/armcontainerinstance/v2/fake"
)

// TestOffline_EvidenceHasEveryContainersLog: before teardown deletes the
// resource group (and the Log Analytics workspace with it), every worker's
// and every sidecar's log is saved through ARM list-logs; one container that
// cannot be read does not cost the others theirs.
func TestOffline_EvidenceHasEveryContainersLog(t *testing.T) {
	d := Deployment{ResourceGroup: "rg-blobleader-test-abc123", Groups: []string{"ci-blabc123-worker-01", "ci-blabc123-worker-02"},
		SidecarImage: "cr.azurecr.io/blobleader/chaos@sha256:00"}
	var asked []string
	srv := acifake.ContainersServer{
		ListLogs: func(_ context.Context, rg, group, ctr string, o *armcontainerinstance.ContainersClientListLogsOptions) (resp azfake.Responder[armcontainerinstance.ContainersClientListLogsResponse], errResp azfake.ErrorResponder) {
			asked = append(asked, group+"/"+ctr)
			if rg != d.ResourceGroup || o == nil || o.Timestamps == nil || !*o.Timestamps {
				errResp.SetResponseError(http.StatusBadRequest, "BadRequest")
				return
			}
			if group == "ci-blabc123-worker-02" && ctr == "chaos" {
				errResp.SetResponseError(http.StatusNotFound, "ContainerGroupNotFound")
				return
			}
			resp.SetResponse(http.StatusOK, armcontainerinstance.ContainersClientListLogsResponse{
				Logs: armcontainerinstance.Logs{Content: to.Ptr("2026-11-24T19:00:00Z " + group + " " + ctr + " started\n")}}, nil)
			return
		},
	}
	client, err := armcontainerinstance.NewContainersClient("00000000-0000-0000-0000-000000000000", &azfake.TokenCredential{},
		&arm.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: acifake.NewContainersServerTransport(&srv)}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	files, err := CollectEvidence(ctx, client, nil, d, dir)
	if err == nil || !strings.Contains(err.Error(), "ci-blabc123-worker-02/chaos") {
		t.Errorf("CollectEvidence error = %v, want the unreadable container named", err)
	}
	if len(asked) != 4 {
		t.Errorf("asked ARM for %v, want the worker and chaos containers of both groups", asked)
	}
	if len(files) != 3 {
		t.Fatalf("wrote %v, want the three readable logs", files)
	}
	for _, name := range []string{"ci-blabc123-worker-01-worker", "ci-blabc123-worker-01-chaos", "ci-blabc123-worker-02-worker"} {
		b, err := os.ReadFile(filepath.Join(dir, "logs", name+".log"))
		if err != nil || !strings.Contains(string(b), "started") {
			t.Errorf("logs/%s.log = %q, %v", name, b, err)
		}
	}
}
