//go:build azure

package azure

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// planTimeReads are the data sources the deployment root may read at plan
// time: only what exists before anything is created (the caller's own
// identity and subscription).
var planTimeReads = []string{"azurerm_client_config"}

// TestOffline_FirstDeployReadsNothingAtPlanTime: one `make deploy` on an
// empty subscription must succeed with alerts on. A data source is read
// while the plan is made, before the same apply creates what it reads, and
// a plan that fails is never applied: a read of the log table (which the
// diagnostic settings of the same apply fill) failed every first deploy and
// every re-run. infra/tests/unit/first_deploy.tftest.hcl applies both
// stages on a mocked provider; this test shows that nothing in them reads
// what they create, and that the alert rules are created after the routes
// that fill their table, without Azure resolving the table at creation.
func TestOffline_FirstDeployReadsNothingAtPlanTime(t *testing.T) {
	infra := filepath.Join(repoRoot(t), "infra")
	blocks := rootBlocks(t, infra)
	var data []string
	for _, b := range blocks {
		if b.Type == "data" {
			data = append(data, b.Labels[0]+"."+b.Labels[1])
			if !slices.Contains(planTimeReads, b.Labels[0]) {
				t.Errorf("infra/ reads data.%s.%s at plan time (%s): on a first deploy what it reads does not exist yet, the plan fails and the apply that would create it never runs; create the dependent resource after it instead (depends_on)",
					b.Labels[0], b.Labels[1], b.DefRange().Filename)
			}
		}
	}
	if len(data) == 0 {
		t.Fatal("no data block found in infra/*.tf (not even the client config): the check saw nothing")
	}
	rules := 0
	for _, b := range blocks {
		if b.Type != "resource" || b.Labels[0] != "azurerm_monitor_scheduled_query_rules_alert_v2" {
			continue
		}
		rules++
		attrs := b.Body.Attributes
		if a, ok := attrs["skip_query_validation"]; !ok || !isTrue(a.Expr) {
			t.Errorf("%s.%s: skip_query_validation must be true: the rule is created before its table's first line (the legacy table does not exist until then)", b.Labels[0], b.Labels[1])
		}
		deps := traversals(attrs["depends_on"])
		for _, want := range []string{"azurerm_monitor_diagnostic_setting.groups"} {
			if !slices.Contains(deps, want) {
				t.Errorf("%s.%s: depends_on %v lacks %s: the rules come after the routes that fill their table", b.Labels[0], b.Labels[1], deps, want)
			}
		}
	}
	if rules == 0 {
		t.Fatal("no azurerm_monitor_scheduled_query_rules_alert_v2 in infra/*.tf: the check saw nothing")
	}
}

// rootBlocks are the top-level blocks of every dir/*.tf.
func rootBlocks(t *testing.T, dir string) hclsyntax.Blocks {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no .tf files in %s: %v", dir, err)
	}
	var out hclsyntax.Blocks
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, diags := hclsyntax.ParseConfig(src, f, hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatalf("%s: %v", f, diags)
		}
		out = append(out, file.Body.(*hclsyntax.Body).Blocks...)
	}
	return out
}

// isTrue reports whether e is the literal true.
func isTrue(e hclsyntax.Expression) bool {
	l, ok := e.(*hclsyntax.LiteralValueExpr)
	return ok && l.Val.Type() == cty.Bool && l.Val.True()
}

// traversals are the references a list attribute names (depends_on).
func traversals(a *hclsyntax.Attribute) []string {
	if a == nil {
		return nil
	}
	var out []string
	for _, tr := range a.Expr.Variables() {
		var parts []string
		for _, step := range tr {
			switch s := step.(type) {
			case hcl.TraverseRoot:
				parts = append(parts, s.Name)
			case hcl.TraverseAttr:
				parts = append(parts, s.Name)
			}
		}
		out = append(out, strings.Join(parts, "."))
	}
	return out
}
