# Prometheus rules and the Grafana dashboard for workers scraped by Prometheus
# (infra/monitoring/), and the Azure alert queries (infra/alerts/*.kql);
# docs/operations.md, "Alerts". Included from the top Makefile.

MONITORING       := $(ROOT)/infra/monitoring
# promtool from the Prometheus module (the Go module proxy serves it as v0.x
# versions: v0.316.0 is Prometheus 3.x's tree), pinned, into ./bin.
PROMTOOL_VERSION := v0.316.0
PROMTOOL         := $(BIN)/promtool-$(PROMTOOL_VERSION)

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
test-dashboard: ## Check the Grafana dashboard against Grafana's dashboard schema (strict) and its queries against the rules' metric names.
	$(GO) -C test test -count=1 -timeout 2m ./monitoring/...

$(PROMTOOL):
	@echo ">> go install github.com/prometheus/prometheus/cmd/promtool@$(PROMTOOL_VERSION) (first use; a few minutes)"
	@mkdir -p $(BIN); tmp=$$(mktemp -d); \
	  GOBIN=$$tmp $(GO) install github.com/prometheus/prometheus/cmd/promtool@$(PROMTOOL_VERSION); \
	  mv $$tmp/promtool $@; rm -rf $$tmp
