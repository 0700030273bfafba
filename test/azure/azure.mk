# Azure chaos suite (owned by test/azure/; included from the top Makefile).
#
# `make test-azure` deploys infra/ with the chaos sidecar into a fresh resource
# group, runs the chaos scenarios against it and destroys it (docs/testing-on-azure.md).
# Without ARM_SUBSCRIPTION_ID and credentials it prints one line naming what is
# missing and exits 2 before anything is built or created.
# `make test-azure-offline` is what `make test` runs: vet with the azure tag and
# every Offline test (ARM SDK fakes, Azurite, local TLS), no subscription needed.

##@ Azure suite

AZURE_TEST_TIMEOUT  ?= 240m
AZURE_RUN           ?= TestAzure_Election
# Reaches go test through the environment ("$$AZURE_RUN"), never spliced into
# the recipe's shell line: a workflow input may carry quotes.
export AZURE_RUN


.PHONY: test-azure
test-azure: ## Chaos and alert scenarios on a fresh Azure deployment, alerts on (ARM_SUBSCRIPTION_ID + az login, a service principal or OIDC; ~2 h, ~$2-3); report in out/azure-suite/reports; SKIP_deploy|verify|chaos|alerts|shards|teardown=1 while iterating.
	@mkdir -p $(BIN) && $(GO) -C test build -tags azure -o $(BIN)/azure-preflight ./azure/cmd/preflight
	@$(BIN)/azure-preflight
	BLOBLEADER_AZURE_REQUIRED=1 $(GO) -C test test -tags azure -count=1 -v -timeout $(AZURE_TEST_TIMEOUT) -run "$$AZURE_RUN" ./azure

.PHONY: verify-azure
verify-azure: ## After make deploy (TF_DIR=infra): check on Azure what no offline test can (providers registered, log table and columns, worker lines arrive, each alert query runs, role propagation measured); report in out/verify-azure. make test-azure runs the same checks first.
	@mkdir -p $(BIN) && $(GO) -C test build -tags azure -o $(BIN)/verify-azure ./azure/cmd/verify-azure
	@$(BIN)/verify-azure --tf-dir $(or $(TF_DIR),$(ROOT)/infra) --out $(ROOT)/out/verify-azure

.PHONY: test-azure-teardown
test-azure-teardown: ## Save the logs, then destroy what an interrupted make test-azure left: from its saved state in out/azure-suite, else by its tags (run=<postfix>; BLOBLEADER_AZURE_RUN=<postfix> when the work directory is gone).
	@mkdir -p $(BIN) && $(GO) -C test build -tags azure -o $(BIN)/azure-preflight ./azure/cmd/preflight
	@$(BIN)/azure-preflight
	SKIP_deploy=1 SKIP_verify=1 SKIP_chaos=1 SKIP_alerts=1 SKIP_shards=1 BLOBLEADER_AZURE_REQUIRED=1 $(GO) -C test test -tags azure -count=1 -v -timeout 60m -run '^TestAzure_Election$$' ./azure

.PHONY: test-azure-offline
test-azure-offline: node_modules ## Offline part of the Azure suite: go vet -tags azure, and the Offline tests (ARM fakes, Azurite, local TLS).
	@for m in $(GO_MODULES); do echo ">> go vet -tags azure ($$m)"; $(GO) -C $$m vet -tags azure ./...; done
	$(GO) -C chaos test -tags azure -count=1 -timeout 10m -run Offline ./...
	$(GO) -C test test -tags azure -count=1 -timeout 10m -run Offline ./azure/...
