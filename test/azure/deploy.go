//go:build azure

package azure

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/gruntwork-io/terratest/modules/terraform"

	"github.com/blobleader/blobleader/test/cluster"
	"github.com/blobleader/blobleader/worker/election"
)

// Deployment is what the deploy stage leaves for the later stages (saved as
// JSON in the work directory, so `SKIP_deploy=1` reuses it).
type Deployment struct {
	Postfix        string         `json:"postfix"`
	Location       string         `json:"location"`
	ResourceGroup  string         `json:"resource_group"`
	StorageAccount string         `json:"storage_account"`
	BlobEndpoint   string         `json:"blob_endpoint"`
	LeaseContainer string         `json:"lease_container"`
	LockBlob       string         `json:"lock_blob"`
	ChaosContainer string         `json:"chaos_container"`
	RegistryName   string         `json:"registry_name"`
	RegistryLogin  string         `json:"registry_login"`
	Groups         []string       `json:"groups"`
	WorkerImage    string         `json:"worker_image"`
	SidecarImage   string         `json:"sidecar_image"`
	Operator       string         `json:"operator"`
	Params         cluster.Params `json:"params"`
	Started        time.Time      `json:"started"`  // stage 1 began (the registry exists from here)
	Deployed       time.Time      `json:"deployed"` // the groups exist from here
	// Stages are how long each deploy step took (Terraform applies, image
	// builds and pushes): part of the run's report.
	Stages map[string]time.Duration `json:"stage_durations_ns"`
}

// NewPostfix is 6 random lower-case letters and digits: part of every
// resource name, so concurrent runs and leftovers never collide.
func NewPostfix() string {
	const abc = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	for i := range b {
		b[i] = abc[int(b[i])%len(abc)]
	}
	b[0] = abc[int(b[0])%26] // name_prefix must start with a letter
	return string(b)
}

// The suite's container requests: worker and chaos sidecar together make
// exactly Azure Container Instances' minimum per group, 1 vCPU and 1 GB
// (infra/variables.tf refuses less), each in ACI's steps of 0.1.
const (
	suiteWorkerCPU    = 0.8
	suiteWorkerMemGB  = 0.7
	suiteSidecarCPU   = 0.2
	suiteSidecarMemGB = 0.3
)

// SuiteParams are the election timings the suite deploys: the worker's
// default timings, a 1 s leader tick.
func SuiteParams() cluster.Params {
	return cluster.Params{Timing: election.DefaultTiming(), Tick: time.Second, ShutdownGrace: 5 * time.Second}
}

// Images are the two pushed, digest-pinned images of stage 2.
type Images struct {
	Worker  string // <login>/blobleader/worker@sha256:…
	Sidecar string // <login>/blobleader/chaos@sha256:…
}

// TerraformVars are the variables of infra/ for one suite run. Stage 1
// (images nil) creates everything but the container groups and the chaos
// control container; stage 2 adds the groups, pinned by digest, each with
// the chaos sidecar, and grants the harness (operator) the data roles it
// needs. extra (JSON object) overrides any of them, e.g. {"zones":[]}.
func TerraformVars(e Env, postfix, operator string, images *Images) (map[string]any, error) {
	p := SuiteParams()
	vars := map[string]any{
		"location":               e.Location,
		"name_prefix":            "bl" + postfix,
		"name_suffix":            postfix,
		"resource_group_name":    "rg-blobleader-test-" + postfix,
		"worker_count":           e.Workers,
		"operator_principal_ids": []string{operator},
		"lease_duration_seconds": int(p.LeaseDuration / time.Second),
		"renew_deadline_seconds": int(p.RenewDeadline / time.Second),
		"renew_interval_seconds": int(p.RenewInterval / time.Second),
		"retry_period_seconds":   int(p.RetryPeriod / time.Second),
		"tick_seconds":           int(p.Tick / time.Second),
		"history_to_blob":        true,
		"image_digest":           "",
		"chaos_sidecar":          map[string]any{"enabled": false},
		// On every taggable resource: teardown finds the run by them when
		// its state is gone (TeardownByTags).
		"tags": map[string]string{TagPurpose: SuitePurpose, TagRun: postfix},
	}
	// The alerts users get, meeting Azure here first: the action group, the
	// rules (the alerts stage reads what they fire; mail goes to
	// EnvAlertMail, by default an address of a reserved domain).
	mail := e.AlertEmail
	if mail == "" {
		mail = DefaultAlertEmail
	}
	vars["alerts"] = map[string]any{"email_receivers": []string{mail}}
	if images != nil {
		i := strings.LastIndex(images.Worker, "@")
		if i < 0 || !strings.Contains(images.Sidecar, "@sha256:") {
			return nil, fmt.Errorf("azure: images must be pinned by digest: %q, %q", images.Worker, images.Sidecar)
		}
		vars["image_digest"] = images.Worker[i+1:]
		// The groups with their sidecar at ACI's minimum (see the constants).
		// Stage 1 creates no group and keeps infra's defaults, which alone
		// meet the minimum (infra/variables.tf checks the sum either way).
		vars["worker_cpu"], vars["worker_memory_gb"] = suiteWorkerCPU, suiteWorkerMemGB
		vars["chaos_sidecar"] = map[string]any{
			"enabled":   true,
			"image":     images.Sidecar,
			"cpu":       suiteSidecarCPU,
			"memory_gb": suiteSidecarMemGB,
			// Twice a second: faults apply and statuses refresh within
			// about half a second, well inside the scenarios' slack.
			"poll_seconds":             0.5,
			"controller_principal_ids": []string{operator},
		}
	}
	if e.ExtraVars != "" {
		var extra map[string]any
		if err := json.Unmarshal([]byte(e.ExtraVars), &extra); err != nil {
			return nil, fmt.Errorf("azure: %s is not a JSON object: %w", EnvTFVars, err)
		}
		for k, v := range extra {
			vars[k] = v
		}
	}
	return vars, nil
}

// TerraformOptions are terratest's options for the copy of infra/ in dir.
// ARM may take minutes to propagate new role assignments (AcrPull for the
// image pull, the blob roles), so those failures are retried.
func TerraformOptions(e Env, dir string, vars map[string]any) *terraform.Options {
	return &terraform.Options{
		TerraformDir:    dir,
		TerraformBinary: e.Terraform,
		Vars:            vars,
		NoColor:         true,
		EnvVars:         map[string]string{"CHECKPOINT_DISABLE": "1", "ARM_SUBSCRIPTION_ID": e.SubscriptionID},
		RetryableTerraformErrors: map[string]string{
			retryImagePull: "AcrPull for the workers' identity is still propagating",
			// PrincipalNotFound: a new identity not yet replicated in Entra ID.
			// Not AuthorizationFailed: that is the deployer missing a role,
			// which no amount of waiting grants.
			"(?s).*PrincipalNotFound.*": "a new identity is still propagating",
		},
		// Role assignments can take up to about 10 minutes to propagate
		// (docs/security.md): 8 retries 90 s apart cover 12.
		MaxRetries:         8,
		TimeBetweenRetries: 90 * time.Second,
	}
}

// retryImagePull matches a refused image pull, which only the propagation
// of the AcrPull assignment the deploy stage created can explain.
const retryImagePull = "(?s).*(InaccessibleImage|RegistryErrorResponse|unauthorized: authentication required).*"

// LaterApply are the options of an apply after the deploy stage (the
// shards stage's): the AcrPull assignment has propagated by then (the
// verify stage saw every worker run), so a refused image pull is a real
// failure to report at once, not one to retry for 12 minutes.
func LaterApply(opts *terraform.Options) *terraform.Options {
	o := *opts
	o.RetryableTerraformErrors = map[string]string{}
	for re, why := range opts.RetryableTerraformErrors {
		if re != retryImagePull {
			o.RetryableTerraformErrors[re] = why
		}
	}
	return &o
}

// CopyInfra copies infra/'s deployment root into dir: the configuration, the
// committed lock file and every file the configuration reads (the alert
// queries in alerts/, the table schema), without state, caches or the
// directories that are not part of the root (scripts, tests, examples, the
// CI identity, the image builder, the Prometheus rules). The suite's
// Terraform state then never mixes with a `make deploy` in the checkout.
func CopyInfra(root, dir string) error {
	src := filepath.Join(root, "infra")
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			if rel != "." && notInRoot[d.Name()] {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		name := d.Name()
		if strings.HasPrefix(name, "terraform.tfstate") || strings.HasSuffix(name, ".tfstate") ||
			name == ".terraform.tfstate.lock.info" || !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
}

// notInRoot are the directories under infra/ that the deployment root does
// not read: Terraform's cache and the suite's own data, the harness's
// tools, tests, examples and the CI identity (roots of their own).
var notInRoot = map[string]bool{
	".terraform": true, ".test-data": true, "image": true, "scripts": true, "tests": true,
	"examples": true, "ci": true, "monitoring": true,
}

// BuildImages builds the worker and the sidecar as static linux/amd64
// binaries and packs each into an OCI layout with infra/image (the same
// builder `make image` uses: the binary lands at /blobleader, which is the
// entrypoint, with /status linked to it; the sidecar image has
// /chaos-sidecar and no link).
func BuildImages(ctx context.Context, root, out string) (worker, side string, err error) {
	worker, side = filepath.Join(out, "image-worker"), filepath.Join(out, "image-chaos")
	steps := []struct {
		name string
		args []string
	}{
		{"build worker", []string{"build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(out, "blobleader-linux-amd64"), "./worker/cmd/blobleader"}},
		{"build sidecar", []string{"-C", "chaos", "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(out, "chaos-sidecar-linux-amd64"), "./sidecar/cmd/chaos-sidecar"}},
		{"image worker", []string{"-C", "infra/image", "run", ".", "build", "--binary", filepath.Join(out, "blobleader-linux-amd64"), "--out", worker}},
		{"image sidecar", []string{"-C", "infra/image", "run", ".", "build", "--name", "chaos-sidecar", "--binary", filepath.Join(out, "chaos-sidecar-linux-amd64"), "--out", side}},
	}
	for _, s := range steps {
		cmd := exec.CommandContext(ctx, "go", s.args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		if slices.Contains(s.args, "run") { // the builder itself runs here, for this machine
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		}
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("azure: %s: %v\n%s", s.name, err, b)
		}
	}
	return worker, side, nil
}

// PushImage pushes an OCI layout to repo with infra/image push and returns
// the digest-pinned reference it prints. The registry token travels in the
// environment only, as in deploy.sh.
func PushImage(ctx context.Context, root, layout, repo, token string) (string, error) {
	cmd := pushCommand(ctx, root, layout, repo)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "BLOBLEADER_REGISTRY_TOKEN="+token)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("azure: push %s to %s: %v\n%s", layout, repo, err, stderr.String())
	}
	ref := strings.TrimSpace(string(b))
	if !strings.Contains(ref, "@sha256:") {
		return "", fmt.Errorf("azure: push %s printed %q, not a digest reference", layout, ref)
	}
	return ref, nil
}

// pushCommand runs infra/image's push; infra/image is a module of its own,
// so it runs there (go -C), not as a package of the root module.
func pushCommand(ctx context.Context, root, layout, repo string, extra ...string) *exec.Cmd {
	args := append([]string{"-C", filepath.Join(root, "infra", "image"), "run", ".", "push", "--layout", layout, "--repository", repo}, extra...)
	return exec.CommandContext(ctx, "go", args...)
}

// Push gets a registry token and pushes both images.
func Push(ctx context.Context, root string, cred azcore.TokenCredential, login, workerLayout, sidecarLayout string) (*Images, error) {
	tok, err := RegistryToken(ctx, http.DefaultClient, cred, "https://"+login)
	if err != nil {
		return nil, err
	}
	w, err := PushImage(ctx, root, workerLayout, login+"/blobleader/worker", tok)
	if err != nil {
		return nil, err
	}
	s, err := PushImage(ctx, root, sidecarLayout, login+"/blobleader/chaos", tok)
	if err != nil {
		return nil, err
	}
	return &Images{Worker: w, Sidecar: s}, nil
}

// SaveDeployment and LoadDeployment keep the deployment between stages.
func SaveDeployment(dir string, d Deployment) error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "deployment.json"), b, 0o644)
}

func LoadDeployment(dir string) (Deployment, error) {
	var d Deployment
	b, err := os.ReadFile(filepath.Join(dir, "deployment.json"))
	if err != nil {
		return d, fmt.Errorf("azure: no deployment in %s (run the deploy stage: unset SKIP_deploy): %w", dir, err)
	}
	return d, json.Unmarshal(b, &d)
}
