# Prometheus rules and the Grafana dashboard for workers scraped by Prometheus
# (infra/monitoring/), and the Azure alert queries (infra/alerts/*.kql);
# docs/operations.md, "Alerts". Included from the top Makefile.

MONITORING       := $(ROOT)/infra/monitoring
# promtool from the Prometheus module (the Go module proxy serves it as v0.x
# versions: v0.316.0 is Prometheus 3.x's tree), pinned, into ./bin.
PROMTOOL_VERSION := v0.316.0
PROMTOOL         := $(BIN)/promtool-$(PROMTOOL_VERSION)
# The Prometheus server of the same tree, for the dashboard picture only.
PROMETHEUS       := $(BIN)/prometheus-$(PROMTOOL_VERSION)

##@ Monitoring (Prometheus, Grafana)

.PHONY: test-rules
test-rules: $(PROMTOOL) ## Check the Prometheus rules and run their unit tests (each alert firing and not firing) with the pinned promtool.
	@echo ">> promtool check rules"
	@$(PROMTOOL) check rules $(MONITORING)/prometheus/blobleader.rules.yml
	@echo ">> promtool test rules"
	@cd $(MONITORING)/prometheus && $(PROMTOOL) test rules blobleader.rules_test.yml

.PHONY: test-kql
test-kql: node_modules/.installed ## Parse and analyse the Azure alert queries (infra/alerts/*.kql) with the pinned Kusto language service.
	@echo ">> Kusto language service: infra/alerts/*.kql"
	@node $(ROOT)/infra/scripts/kql_check.js

.PHONY: test-dashboard
test-dashboard: ## Check the Grafana dashboard against Grafana's dashboard schema (strict), and that it and the rules read only metrics the worker exports.
	$(GO) -C test test -count=1 -timeout 2m ./monitoring/...

.PHONY: dashboard-shot
dashboard-shot: build node_modules $(PROMETHEUS) ## Picture of the Grafana dashboard from a real local run (Azurite, 3 workers, the pinned Prometheus; ~3 min) into docs/monitoring/dashboard.svg.
	$(GO) -C test run ./cmd/dashshot --prometheus $(PROMETHEUS) --worker $(BIN)/blobleader \
	  --dashboard $(MONITORING)/grafana/blobleader.json --rules $(MONITORING)/prometheus/blobleader.rules.yml \
	  --out $(ROOT)/docs/monitoring/dashboard.svg

$(PROMETHEUS):
	@echo ">> go install github.com/prometheus/prometheus/cmd/prometheus@$(PROMTOOL_VERSION) (first use; several minutes)"
	@mkdir -p $(BIN); tmp=$$(mktemp -d); \
	  GOBIN=$$tmp $(GO) install github.com/prometheus/prometheus/cmd/prometheus@$(PROMTOOL_VERSION); \
	  mv $$tmp/prometheus $@; rm -rf $$tmp

$(PROMTOOL):
	@echo ">> go install github.com/prometheus/prometheus/cmd/promtool@$(PROMTOOL_VERSION) (first use; a few minutes)"
	@mkdir -p $(BIN); tmp=$$(mktemp -d); \
	  GOBIN=$$tmp $(GO) install github.com/prometheus/prometheus/cmd/promtool@$(PROMTOOL_VERSION); \
	  mv $$tmp/promtool $@; rm -rf $$tmp
