//go:build azure

package azure

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerinstance/armcontainerinstance/v2"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v3"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/storage/armstorage"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/gruntwork-io/terratest/modules/terraform"
	test_structure "github.com/gruntwork-io/terratest/modules/test-structure"

	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/report"
	"github.com/blobleader/blobleader/test/scenarios"
)

// TestAzure_Election deploys infra/ with the chaos sidecar into a fresh
// resource group, checks that one leader is elected, runs every scenario of
// the local suite that ACI allows against it (judged by the same checker,
// with a clock-skew tolerance), runs the alert scenarios and checks that
// each alert fires during its scenario and is quiet otherwise, applies the
// groups again in shard mode and runs the shard scenarios (judged by the
// shard rules too), and destroys everything. Stages: deploy, verify, chaos,
// alerts, shards, teardown; SKIP_<stage>=1 skips one while iterating (the
// deployment is remembered in the work directory). Run it with
// `make test-azure` (it sets -timeout 240m).
func TestAzure_Election(t *testing.T) {
	t.Parallel()
	env, err := LoadEnv(HostProbe())
	if err != nil {
		if os.Getenv(EnvRequired) == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	root := repoRoot(t)
	work := env.WorkDir
	if work == "" {
		work = filepath.Join(root, "out", "azure-suite")
	}
	tfDir := filepath.Join(work, "infra")
	cred, err := NewCredential(env.Credential)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("credentials: %s", env.Credential.Kind)

	// Teardown is registered before anything is applied. It saves the
	// evidence first (container logs, histories), then destroys from the
	// saved state, or by the run's tags when the state is gone or the
	// destroy fails.
	defer test_structure.RunTestStage(t, "teardown", func() { teardownStage(t, env, work, tfDir, cred) })

	test_structure.RunTestStage(t, "deploy", func() { deployStage(t, env, root, work, tfDir, cred) })

	test_structure.RunTestStage(t, "verify", func() {
		d, err := LoadDeployment(work)
		if err != nil {
			t.Fatal(err)
		}
		// First the assumptions no offline test can show (make
		// verify-azure): each false one is one error naming it.
		verifyAssumptions(t, env, tfDir, work, cred)
		verifyStage(t, newCluster(t, env, d, work, cred), d)
	})

	test_structure.RunTestStage(t, "chaos", func() {
		d, err := LoadDeployment(work)
		if err != nil {
			t.Fatal(err)
		}
		c := newCluster(t, env, d, work, cred)
		defer c.Stop()
		out := os.Getenv(scenarios.EnvOut)
		if out == "" {
			out = filepath.Join(work, "reports")
		}
		rr := RunReport{Started: d.Started, Location: d.Location, Postfix: d.Postfix, Workers: len(d.Groups),
			Credential: string(env.Credential.Kind), WorkerImg: d.WorkerImage, ClockSkew: env.ClockSkew, Stages: d.Stages}
		// The run's evidence is written however the scenarios end.
		defer func() {
			rr.Ended = time.Now()
			in := DefaultCostInputs(len(d.Groups))
			in.GroupsRunning, in.Deployed = time.Since(d.Deployed), time.Since(d.Started)
			rr.Cost = EstimateCost(in)
			if jp, mp, err := WriteRunReport(out, rr); err != nil {
				t.Errorf("run report: %v", err)
			} else {
				t.Logf("run report: %s (%s)", mp, jp)
			}
		}()
		for _, s := range Scenarios() {
			// One deployment, so the scenarios run one after the other.
			sr := ScenarioReport{Name: s.Name, Start: time.Now()}
			opsBefore := len(c.ARMOps())
			passed := t.Run(s.Name, func(t *testing.T) {
				if s.Skip != "" {
					t.Skip("not on Azure: " + s.Skip)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
				defer cancel()
				// One deployment for all: whatever happens, leave no fault
				// behind for the next scenario (Judge heals too).
				defer func() {
					if err := c.Heal(context.WithoutCancel(ctx)); err != nil {
						t.Errorf("heal after %s: %v", s.Name, err)
					}
				}()
				if _, err := c.Start(ctx, s.Workers); err != nil {
					t.Fatal(err)
				}
				c.WaitLeader(t, 5*time.Minute)
				s.Run(t, c)
				ops := c.ARMOps()[opsBefore:]
				run, res, files := Judge(t, c, "Azure_"+s.Name, out, env.ClockSkew, ScenarioExtra(ops, DefaultCostInputs(len(d.Groups)), time.Since(sr.Start)))
				if err := res.Err(); err != nil {
					t.Error(err)
				}
				// Graceful by construction: a graceful stop of the leader
				// must show its `released` event, not the crash bound.
				if err := RequireReleased(run, res, sr.Start); err != nil {
					t.Error(err)
				}
				sum := report.Summarize(run, res)
				sr.Files, sr.Violations = files, sum.Violations
				for _, fo := range sum.Failovers {
					if fo.Injected >= sr.Start.Sub(sum.Start).Seconds() {
						sr.Failovers = append(sr.Failovers, fo) // this scenario's failovers only
					}
				}
			})
			sr.End, sr.ARMOps = time.Now(), c.ARMOps()[opsBefore:]
			switch {
			case s.Skip != "":
				sr.Verdict, sr.Reason = VerdictSkip, s.Skip
			case passed:
				sr.Verdict = VerdictPass
			default:
				sr.Verdict, sr.Reason = VerdictFail, "see the test log and Azure_"+s.Name+".html"
			}
			rr.Scenarios = append(rr.Scenarios, sr)
		}
	})

	test_structure.RunTestStage(t, "alerts", func() { alertsStage(t, env, work, tfDir, cred) })

	test_structure.RunTestStage(t, "shards", func() { shardsStage(t, env, work, tfDir, cred) })
}

// alertsStage runs AlertScenarios on the deployment: after each, every
// rule's query as deployed runs over the scenario's time (once its lines are
// ingested), and exactly the rules it must fire return rows. Then Azure
// Monitor itself must have fired each of those rules, and two_leaders must
// never have fired since the deploy, by Azure Monitor or by its query over
// the whole run.
func alertsStage(t *testing.T, env Env, work, tfDir string, cred azcore.TokenCredential) {
	d, err := LoadDeployment(work)
	if err != nil {
		t.Fatal(err)
	}
	opts := test_structure.LoadTerraformOptions(t, tfDir)
	target, _, err := TargetFromOutputs([]byte(terraform.OutputJson(t, opts, "")), tfDir)
	if err != nil {
		t.Fatalf("alerts: %v", err)
	}
	var p AlertParams
	terraform.OutputStruct(t, opts, "alert_thresholds", &p)
	rules := map[string]string{}
	terraform.OutputStruct(t, opts, "alert_rule_ids", &rules)
	if len(rules) == 0 || rules[RuleNeverFires] == "" {
		t.Fatalf("alerts: the deployment has no alert rules (%v): the suite deploys the alerts users get", rules)
	}
	c := newCluster(t, env, d, work, cred)
	defer c.Stop()
	logs, reader := NewLogsClient(cred, nil), NewARMClient(cred, nil)
	began := time.Now()
	fires := map[string]string{}
	for _, s := range AlertScenarios() {
		t.Run("Alerts_"+s.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
			defer cancel()
			defer func() {
				if err := c.Heal(context.WithoutCancel(ctx)); err != nil {
					t.Errorf("heal after %s: %v", s.Name, err)
				}
			}()
			if _, err := c.Start(ctx, len(d.Groups)); err != nil {
				t.Fatal(err)
			}
			c.WaitLeader(t, 5*time.Minute)
			from := time.Now()
			if err := s.Run(ctx, c, p); err != nil {
				t.Fatalf("%s: %v", s.Name, err)
			}
			ended := time.Now()
			waited, err := WaitIngested(ctx, logs, target, ended, 20*time.Minute, 30*time.Second, time.Now, sleepCtx)
			if err != nil {
				t.Fatalf("%s: %v", s.Name, err)
			}
			t.Logf("alerts: %s took %v; its last lines were ingested %v later", s.Name, ended.Sub(from).Round(time.Second), waited.Round(time.Second))
			lines, err := CheckRules(ctx, logs, target.Workspace, target.Alerts, from, time.Now(), s.Fires)
			t.Logf("alerts: %s: %s", s.Name, strings.Join(lines, ", "))
			if err != nil {
				t.Errorf("alerts: %s: %v", s.Name, err)
			}
			for _, f := range s.Fires {
				fires[f] = rules[f]
			}
		})
	}
	t.Run("Alerts_AzureMonitorFiresThemAndNeverTwoLeaders", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
		defer cancel()
		fired, err := WaitFired(ctx, reader, env.SubscriptionID, fires, began, 30*time.Minute, time.Minute, time.Now, sleepCtx)
		for name, at := range fired {
			t.Logf("alerts: Azure Monitor fired %s at %s (%v after the stage began)", name, at.UTC().Format(time.RFC3339), at.Sub(began).Round(time.Second))
		}
		if err != nil {
			t.Error(err)
		}
		never, err := FiredAlerts(ctx, reader, env.SubscriptionID, rules[RuleNeverFires], d.Deployed, time.Now())
		switch {
		case err != nil:
			t.Errorf("alerts: the fired alerts of %s cannot be read: %v", RuleNeverFires, err)
		case len(never) > 0:
			t.Errorf("alerts: Azure Monitor fired %s %d times since the deploy, first at %s: two workers' claims overlapped", RuleNeverFires, len(never), never[0].Started.UTC().Format(time.RFC3339))
		}
		lines, err := CheckRules(ctx, logs, target.Workspace, map[string]AlertQuery{RuleNeverFires: target.Alerts[RuleNeverFires]}, d.Deployed, time.Now(), nil)
		t.Logf("alerts: over the whole run since %s: %s", d.Deployed.UTC().Format(time.RFC3339), strings.Join(lines, ", "))
		if err != nil {
			t.Errorf("alerts: %v", err)
		}
	})
}

// shardsStage applies the deployment again with the Terraform variable
// `shards` (BLOBLEADER_SHARDS on every group, which replaces the groups with
// shard-mode workers of the same names) and runs ShardScenarios against it,
// judged by the election's rules and CheckShards on the incarnations started
// since that apply.
func shardsStage(t *testing.T, env Env, work, tfDir string, cred azcore.TokenCredential) {
	d, err := LoadDeployment(work)
	if err != nil {
		t.Fatal(err)
	}
	out := os.Getenv(scenarios.EnvOut)
	if out == "" {
		out = filepath.Join(work, "reports")
	}
	all := ShardScenarios()
	n := all[0].Shards
	for _, s := range all {
		if s.Shards != n {
			t.Fatalf("shard scenarios %s and %s want different N (%d, %d): they share one apply", all[0].Name, s.Name, n, s.Shards)
		}
	}
	// A run filtered to other scenarios (-run TestAzure_Election/X) must
	// not pay for the shard apply.
	if len(ShardStageRuns(all, len(d.Groups), runPattern())) == 0 {
		// Each is reported as skipped below, without paying for the apply.
		for _, s := range all {
			t.Run("Shards_"+s.Name, func(t *testing.T) {
				if s.Skip != "" {
					t.Skip("not on Azure: " + s.Skip)
				}
				t.Skipf("needs %d worker groups, the deployment has %d (set %s)", s.Workers, len(d.Groups), EnvWorkers)
			})
		}
		return
	}
	// The cluster's start precedes the shard-mode incarnations.
	c := newCluster(t, env, d, work, cred)
	defer c.Stop()
	since := time.Now()
	opts := LaterApply(test_structure.LoadTerraformOptions(t, tfDir))
	opts.Vars["shards"] = n
	t0 := time.Now()
	terraform.Apply(t, opts)
	t.Logf("shards: terraform apply with shards = %d took %v", n, time.Since(t0).Round(time.Second))
	wctx, cancel := context.WithTimeout(context.Background(), 2*DiagnosticRestartBudget)
	waitDiagnosticRestart(t, wctx, env, cred, opts, d.ResourceGroup, d.Groups)
	cancel()
	if groups := terraform.OutputList(t, opts, "container_group_names"); strings.Join(groups, ",") != strings.Join(d.Groups, ",") {
		t.Fatalf("shards: the apply named groups %v, the deployment %v", groups, d.Groups)
	}
	for _, s := range all {
		t.Run("Shards_"+s.Name, func(t *testing.T) {
			if s.Skip != "" {
				t.Skip("not on Azure: " + s.Skip)
			}
			if len(d.Groups) < s.Workers {
				t.Skipf("needs %d worker groups, the deployment has %d (set %s)", s.Workers, len(d.Groups), EnvWorkers)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
			defer cancel()
			defer func() {
				if err := c.Heal(context.WithoutCancel(ctx)); err != nil {
					t.Errorf("heal after %s: %v", s.Name, err)
				}
			}()
			if _, err := c.Start(ctx, s.Workers); err != nil {
				t.Fatal(err)
			}
			c.WaitLeader(t, 5*time.Minute)
			start := time.Now()
			opsBefore := len(c.ARMOps())
			s.Run(t, c, s.Shards)
			extra := ScenarioExtra(c.ARMOps()[opsBefore:], DefaultCostInputs(len(d.Groups)), time.Since(start))
			_, res, sres := scenarios.JudgeShards(t, c, ShardJudging(t, c, s.Shards, "Azure_Shards_"+s.Name, out, env.ClockSkew, since, extra))
			if err := checker.Compose(res.Verdict, sres.Verdict).Err(); err != nil {
				t.Error(err)
			}
		})
	}
}

// runPattern is this test binary's -run flag.
func runPattern() string {
	if f := flag.Lookup("test.run"); f != nil {
		return f.Value.String()
	}
	return ""
}

func deployStage(t *testing.T, env Env, root, work, tfDir string, cred azcore.TokenCredential) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Minute)
	defer cancel()
	postfix := NewPostfix()
	operator := env.OperatorID
	if operator == "" {
		var err error
		if operator, err = ObjectID(ctx, cred); err != nil {
			t.Fatal(err)
		}
	}
	// Never over a live state: it is the only way to destroy that
	// deployment with Terraform (docs/testing-on-azure.md).
	moved, err := PrepareWorkDir(work, tfDir, os.Getenv(EnvReplace) == "1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if moved != "" {
		t.Logf("deploy: %s=1: the earlier live state is kept in %s; its resources remain until `make test-azure-teardown` with %s=<its run>", EnvReplace, moved, EnvRun)
	}
	if err := CopyInfra(root, tfDir); err != nil {
		t.Fatal(err)
	}
	started := time.Now().UTC()
	stages := map[string]time.Duration{}
	timed := func(name string, f func()) {
		t0 := time.Now()
		f()
		stages[name] = time.Since(t0)
		t.Logf("deploy: %s took %v", name, stages[name].Round(time.Second))
	}
	t.Logf("deploy: postfix %s, region %s, %d workers, resource group rg-blobleader-test-%s", postfix, env.Location, env.Workers, postfix)

	// 1. Storage, identity, roles, registry, logs (no groups yet).
	vars, err := TerraformVars(env, postfix, operator, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := TerraformOptions(env, tfDir, vars)
	test_structure.SaveTerraformOptions(t, tfDir, opts)
	timed("terraform apply, stage 1 (storage, identity, roles, registry, logs)", func() { terraform.InitAndApply(t, opts) })

	// 2. Build both images without Docker and push them by digest.
	var wl, sl string
	var images *Images
	timed("build images", func() { wl, sl, err = BuildImages(ctx, root, work) })
	if err != nil {
		t.Fatal(err)
	}
	timed("push images", func() {
		images, err = Push(ctx, root, cred, terraform.Output(t, opts, "registry_login_server"), wl, sl)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("deploy: pushed %s and %s", images.Worker, images.Sidecar)

	// 3. The worker groups with the chaos sidecar, pinned by digest.
	if opts.Vars, err = TerraformVars(env, postfix, operator, images); err != nil {
		t.Fatal(err)
	}
	test_structure.SaveTerraformOptions(t, tfDir, opts)
	timed("terraform apply, stage 2 (worker groups with the sidecar)", func() { terraform.Apply(t, opts) })
	groups := terraform.OutputList(t, opts, "container_group_names")
	timed("wait out the diagnostic settings' restart", func() {
		waitDiagnosticRestart(t, ctx, env, cred, opts, terraform.Output(t, opts, "resource_group_name"), groups)
	})

	containers := terraform.OutputMap(t, opts, "container_names")
	d := Deployment{
		Postfix:        postfix,
		Location:       env.Location,
		ResourceGroup:  terraform.Output(t, opts, "resource_group_name"),
		StorageAccount: terraform.Output(t, opts, "storage_account_name"),
		BlobEndpoint:   terraform.Output(t, opts, "storage_blob_endpoint"),
		LeaseContainer: containers["leases"],
		LockBlob:       terraform.Output(t, opts, "lease_blob_name"),
		ChaosContainer: containers["chaos"],
		RegistryName:   terraform.Output(t, opts, "registry_name"),
		RegistryLogin:  terraform.Output(t, opts, "registry_login_server"),
		Groups:         groups,
		WorkerImage:    images.Worker,
		SidecarImage:   images.Sidecar,
		Operator:       operator,
		Params:         SuiteParams(),
		Started:        started,
		Deployed:       time.Now().UTC(),
		Stages:         stages,
	}
	if d.ChaosContainer == "" || len(d.Groups) != env.Workers {
		t.Fatalf("deploy: outputs name chaos container %q and %d groups, want the chaos container and %d groups", d.ChaosContainer, len(d.Groups), env.Workers)
	}
	if err := SaveDeployment(work, d); err != nil {
		t.Fatal(err)
	}
}

// waitDiagnosticRestart waits out the restart each group's diagnostic
// setting causes once applied (WaitDiagnosticRestart), when the deployment
// routes its logs through diagnostic settings, and logs what it saw.
func waitDiagnosticRestart(t *testing.T, ctx context.Context, env Env, cred azcore.TokenCredential, opts *terraform.Options, rg string, groups []string) {
	t.Helper()
	var route LogRoute
	terraform.OutputStruct(t, opts, "log_route", &route)
	if route.Route != RouteDiagnosticSetting {
		t.Logf("deploy: log_route %s: no diagnostic setting, no restart to wait out", route.Route)
		return
	}
	aci, err := armcontainerinstance.NewContainerGroupsClient(env.SubscriptionID, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	waits, err := WaitDiagnosticRestart(ctx, aci, rg, groups, DiagnosticRestartBudget, 15*time.Second, time.Now, sleepCtx)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range waits {
		t.Logf("deploy: %s after its diagnostic setting: %s (%v)", w.Group, w.Evidence, w.After)
	}
}

// teardownStage saves the run's evidence, then removes what it created:
// terraform destroy from the saved state, and by the run's tags (every
// resource group tagged purpose=blobleader-azure-suite, run=<postfix>) when
// there is no state left or the destroy failed. With no saved options at
// all, EnvRun names the run to remove.
func teardownStage(t *testing.T, env Env, work, tfDir string, cred azcore.TokenCredential) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	if d, err := LoadDeployment(work); err == nil {
		saveEvidence(t, ctx, env, d, work, cred)
	}
	run := os.Getenv(EnvRun)
	var opts *terraform.Options
	if _, err := os.Stat(test_structure.FormatTestDataPath(tfDir, "TerraformOptions.json")); err == nil {
		opts = test_structure.LoadTerraformOptions(t, tfDir)
		if tags, ok := opts.Vars["tags"].(map[string]any); ok {
			if r, ok := tags[TagRun].(string); ok && r != "" {
				run = r
			}
		}
	}
	destroyed := false
	if n, err := LiveState(tfDir); opts != nil && err == nil && n > 0 {
		t0 := time.Now()
		if _, err := terraform.DestroyE(t, opts); err != nil {
			t.Errorf("teardown: terraform destroy failed (%v); deleting by the run's tags", err)
		} else {
			destroyed = true
			t.Logf("teardown: terraform destroy took %v", time.Since(t0).Round(time.Second))
		}
	}
	if !destroyed {
		if run == "" {
			t.Logf("teardown: no saved state or options in %s and no %s: nothing known to remove", tfDir, EnvRun)
			return
		}
		groups, err := armresources.NewResourceGroupsClient(env.SubscriptionID, cred, nil)
		if err != nil {
			t.Fatal(err)
		}
		deleted, err := TeardownByTags(ctx, groups, run, t.Logf)
		if err != nil {
			t.Fatalf("teardown: by tags (run %s): %v", run, err)
		}
		t.Logf("teardown: deleted %d resource groups tagged %s=%s: %v", len(deleted), TagRun, run, deleted)
	}
	// The reports, evidence and downloaded histories stay; nothing is left
	// for the state to describe.
	if err := errors.Join(os.RemoveAll(tfDir), os.Remove(filepath.Join(work, "deployment.json"))); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Errorf("teardown: %v", err)
	}
}

// saveEvidence copies every container's log and every worker's history into
// the reports before the resource group (with its Log Analytics workspace)
// is deleted, whatever the run's verdict.
func saveEvidence(t *testing.T, ctx context.Context, env Env, d Deployment, work string, cred azcore.TokenCredential) {
	t.Helper()
	out := os.Getenv(scenarios.EnvOut)
	if out == "" {
		out = filepath.Join(work, "reports")
	}
	dir := filepath.Join(out, "evidence-"+time.Now().UTC().Format("20060102T150405"))
	aci, err := armcontainerinstance.NewContainersClient(env.SubscriptionID, cred, nil)
	if err != nil {
		t.Errorf("evidence: %v", err)
		return
	}
	opts := &container.ClientOptions{}
	opts.Retry = policy.RetryOptions{MaxRetries: 3, TryTimeout: 15 * time.Second}
	hist, err := container.NewClient(strings.TrimSuffix(d.BlobEndpoint, "/")+"/history", cred, opts)
	if err != nil {
		t.Errorf("evidence: %v", err)
		return
	}
	ectx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	files, err := CollectEvidence(ectx, aci, hist, d, dir)
	t.Logf("evidence: %d files in %s", len(files), dir)
	if err != nil {
		// Partial evidence is still kept; the run's verdict stands.
		t.Logf("evidence: not everything could be saved: %v", err)
	}
	if len(files) == 0 {
		t.Errorf("evidence: nothing saved from %s before teardown", d.ResourceGroup)
	}
}

// verifyAssumptions runs make verify-azure's checks on the suite's own
// deployment and writes their report beside the run's reports.
func verifyAssumptions(t *testing.T, env Env, tfDir, work string, cred azcore.TokenCredential) {
	t.Helper()
	opts := test_structure.LoadTerraformOptions(t, tfDir)
	target, leaseURL, err := TargetFromOutputs([]byte(terraform.OutputJson(t, opts, "")), tfDir)
	if err != nil {
		t.Fatalf("verify-azure: %v", err)
	}
	if leaseURL != "" {
		lc, err := container.NewClient(leaseURL, cred, nil)
		if err != nil {
			t.Fatal(err)
		}
		target.DataProbe = func(ctx context.Context) error { _, err := lc.GetProperties(ctx, nil); return err }
	}
	providers, err := armresources.NewProvidersClient(env.SubscriptionID, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	resources, err := armresources.NewClient(env.SubscriptionID, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	started := time.Now()
	v := &Verifier{Logs: NewLogsClient(cred, nil), Providers: providers, Resources: resources, ARM: NewARMClient(cred, nil)}
	as := v.Run(ctx, target)
	out := os.Getenv(scenarios.EnvOut)
	if out == "" {
		out = filepath.Join(work, "reports")
	}
	if md, err := WriteVerifyReport(out, started, target, as); err != nil {
		t.Errorf("verify-azure: report: %v", err)
	} else {
		t.Logf("verify-azure: report %s", md)
	}
	for _, a := range as {
		if a.Verdict == Fail {
			t.Errorf("verify-azure: %s", a.Line())
		} else {
			t.Logf("verify-azure: %s", a.Line())
		}
	}
}

// verifyStage waits until every worker answers (through its sidecar), one
// leader is elected and its history reaches storage, and the harness's own
// data roles work (role assignments take minutes to propagate).
func verifyStage(t *testing.T, c *Cluster, d Deployment) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if _, err := c.Start(ctx, len(d.Groups)); err != nil {
		t.Fatal(err)
	}
	leader := c.WaitLeader(t, 10*time.Minute)
	t.Logf("verify: %s leads", leader.Identity())
	// The harness can write where the faults need it: an empty plan per
	// sidecar (acknowledged), and a probe blob in the lease container (for
	// the operator's BreakLease).
	retry(t, ctx, "clear every sidecar plan", func() error {
		for _, w := range c.workers {
			if err := w.ctl.Clear(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	retry(t, ctx, "write to the lease container", func() error {
		probe := c.cfg.Leases.NewBlockBlobClient("harness-probe")
		if _, err := probe.UploadBuffer(ctx, []byte("ok"), nil); err != nil {
			return err
		}
		_, err := probe.Delete(ctx, nil)
		return err
	})
	retry(t, ctx, "read every worker's history", func() error {
		files, err := DownloadHistory(ctx, c.cfg.History, d.Groups, t.TempDir())
		if err != nil {
			return err
		}
		for _, g := range d.Groups {
			found := false
			for _, f := range files {
				found = found || strings.Contains(f, string(filepath.Separator)+g+string(filepath.Separator))
			}
			if !found {
				return fmt.Errorf("no history blob of %s yet", g)
			}
		}
		return nil
	})
}

func retry(t *testing.T, ctx context.Context, what string, f func() error) {
	t.Helper()
	for {
		err := f()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("verify: cannot %s: %v", what, err)
		case <-time.After(15 * time.Second):
			t.Logf("verify: %s: %v (retrying; roles may still be propagating)", what, err)
		}
	}
}

func newCluster(t *testing.T, env Env, d Deployment, work string, cred azcore.TokenCredential) *Cluster {
	t.Helper()
	aci, err := armcontainerinstance.NewClientFactory(env.SubscriptionID, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	accounts, err := armstorage.NewAccountsClient(env.SubscriptionID, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	blob := func(name string) *container.Client {
		opts := &container.ClientOptions{}
		opts.Retry = policy.RetryOptions{MaxRetries: 3, TryTimeout: 15 * time.Second}
		c, err := container.NewClient(strings.TrimSuffix(d.BlobEndpoint, "/")+"/"+name, cred, opts)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	dir := filepath.Join(work, "history", time.Now().UTC().Format("20060102T150405"))
	c, err := New(Config{
		ResourceGroup:  d.ResourceGroup,
		StorageAccount: d.StorageAccount,
		Groups:         d.Groups,
		LockBlob:       d.LockBlob,
		Params:         d.Params,
		Sidecar:        true,
		Dir:            dir,
		Logf:           t.Logf,
		ARMBudget:      env.ARMBudget,
		GroupsClient:   aci.NewContainerGroupsClient(),
		Exec:           &ACIExec{Containers: aci.NewContainersClient(), ResourceGroup: d.ResourceGroup},
		Accounts:       accounts,
		Leases:         blob(d.LeaseContainer),
		History:        blob("history"),
		Control:        blob(d.ChaosContainer),
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		// The repository root: the root module's go.mod beside worker/ (test/ has a go.mod of its own).
		if _, err := os.Stat(filepath.Join(dir, "worker", "cmd", "blobleader")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal(errors.New("no repository root (worker/cmd/blobleader) above the test"))
		}
		dir = parent
	}
}
