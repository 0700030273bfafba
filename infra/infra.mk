# Terraform checks, image build and Azure deployment (owned by infra/; included from the top Makefile).
# The offline route (no Terraform registry) is described in docs/deploy.md, "Offline checks".

INFRA     := $(ROOT)/infra
TERRAFORM ?= terraform
# Terraform never phones home from these targets (version checkpoint).
export CHECKPOINT_DISABLE := 1

# --- Pinned tools (installed on first use, versioned file names: a bump reinstalls) ---
TFLINT_VERSION         := v0.64.0
TFLINT_AZURERM_VERSION := v0.27.0
TFSEC_VERSION          := v1.26.0
TFLINT                 := $(BIN)/tflint-$(TFLINT_VERSION)
TFLINT_PLUGIN_DIR      := $(BIN)/tflint.d/azurerm-$(TFLINT_AZURERM_VERSION)
TFLINT_AZURERM         := $(TFLINT_PLUGIN_DIR)/tflint-ruleset-azurerm
TFSEC                  := $(BIN)/tfsec-$(TFSEC_VERSION)
ACTIONLINT_VERSION     := v1.7.12
ACTIONLINT             := $(BIN)/actionlint-$(ACTIONLINT_VERSION)
# shellcheck and pyflakes off: actionlint would use whatever this machine has
# installed, and the checks must give the same result everywhere.
ACTIONLINT_RUN         := $(ACTIONLINT) -no-color -shellcheck= -pyflakes= $(wildcard $(ROOT)/.github/workflows/*.yml)

# --- The azurerm provider, built from source into a filesystem mirror ---------------
# The release tag v5.2.0 is commit 8d8282ef5bee (2026-08-20). The module proxy
# reachable here answers 403 "not available" for the tag, its commit and its
# pseudo-version (v1.44.1-0.20260820150621-8d8282ef5bee) and serves only this
# later main snapshot (2026-08-24, CHANGELOG top "5.2.0 (August 20, 2026)").
# For every resource infra/ uses it differs from the tag only in validation
# helpers refactored with the same rules (docs/deploy.md, "Offline checks").
# Where a proxy serves it, `make test-infra AZURERM_GOVERSION=<that pseudo-version>`
# builds the tag itself. ~22 min cold, ~4.6 GB RAM.
AZURERM_VERSION   := 5.2.0
AZURERM_MODULE    := github.com/hashicorp/terraform-provider-azurerm
AZURERM_GOVERSION := v1.44.1-0.20260824201233-fae580791926
AZURERM_BUILD     := $(CACHE)/azurerm-build
TF_MIRROR         := $(CACHE)/terraform/plugins
AZURERM_MIRROR    := $(TF_MIRROR)/registry.terraform.io/hashicorp/azurerm/$(AZURERM_VERSION)/linux_amd64/terraform-provider-azurerm_v$(AZURERM_VERSION)
# CLI config used only by the offline checks (never by deploy/destroy).
TF_OFFLINE_RC     := $(CACHE)/terraform/offline.tfrc
# Scratch copy of infra/ for the offline checks, so their .terraform/ and the
# lock file (hashes of a locally built provider) never touch the deploy root.
TF_CHECK_DIR      := $(ROOT)/out/tfcheck
# Where the checks get the provider: `registry` (plain `terraform init`) when
# the public Terraform registry answers within seconds, else `mirror` (built
# from source, no registry needed). `make test-infra` probes once
# (scripts/provider-route.sh) and says which route it took; set
# TF_PROVIDER_SOURCE=registry|mirror to skip the probe.
TF_PROVIDER_SOURCE ?=
ifeq ($(TF_PROVIDER_SOURCE),registry)
TF_PROVIDER_DEPS :=
TF_CHECK_ENV     := TF_IN_AUTOMATION=1 TF_INPUT=0
else
TF_PROVIDER_DEPS := $(AZURERM_MIRROR) $(TF_OFFLINE_RC)
TF_CHECK_ENV     := TF_CLI_CONFIG_FILE=$(TF_OFFLINE_RC) TF_IN_AUTOMATION=1 TF_INPUT=0
endif

# --- Image and deployment --------------------------------------------------------------
IMAGE_DIR      := $(ROOT)/out/image
WORKER_LINUX   := $(ROOT)/out/blobleader-linux-amd64
# Empty: infra/image finds the machine's bundle (Debian, Fedora, macOS, Alpine paths).
CA_BUNDLE      ?=
AZURE_LOCATION ?= eastus
WORKER_COUNT   ?= 3

# $(call timed,label,command): run a check and print how long it took.
timed = t0=$$(date +%s%N); $(2); printf '>> %-40s %6d ms\n' '$(1)' $$(( ($$(date +%s%N) - t0) / 1000000 ))

# $(call go-install-tool,target,package,version): `go install` once into a temp GOBIN,
# then move the binary to its versioned name.
define go-install-tool
@[ -x "$(1)" ] || { \
	echo ">> go install $(2)@$(3)"; \
	mkdir -p "$(dir $(1))"; tmp=$$(mktemp -d); \
	GOBIN=$$tmp $(GO) install $(2)@$(3); \
	mv "$$tmp/$$(basename $(2))" "$(1)"; rm -rf "$$tmp"; }
endef

##@ Infrastructure (Azure)

.PHONY: test-infra
test-infra: ## Offline infra checks, each timed: terraform fmt/init/validate/test (mock_provider) of infra/ and infra/ci, the destroy plan without TF_VAR_*, the Azure suite's copy planned with its variables, tflint, tfsec, actionlint, deploy.sh and provider-mirror.sh tests.
	@route='$(TF_PROVIDER_SOURCE)'; [ -n "$$route" ] || route=$$(bash $(INFRA)/scripts/provider-route.sh); \
	  case "$$route" in registry|mirror) ;; *) echo "TF_PROVIDER_SOURCE must be registry or mirror, not '$$route'"; exit 2;; esac; \
	  echo ">> azurerm provider route: $$route"; \
	  $(MAKE) test-infra-checks TF_PROVIDER_SOURCE=$$route

.PHONY: test-infra-checks
test-infra-checks: $(TF_PROVIDER_DEPS) $(TFLINT) $(TFLINT_AZURERM) $(TFSEC) $(ACTIONLINT)
	@$(call timed,terraform fmt -check -recursive,$(TF_CHECK_ENV) $(TERRAFORM) fmt -check -recursive $(INFRA))
	@rm -rf $(TF_CHECK_DIR) && mkdir -p $(TF_CHECK_DIR) && \
	  tar -C $(INFRA) --exclude=.terraform --exclude=.terraform.lock.hcl --exclude='*.tfstate*' \
	    --exclude=image --exclude=scripts -cf - . | tar -C $(TF_CHECK_DIR) -xf -
	@$(call timed,terraform init -backend=false ($(TF_PROVIDER_SOURCE)),$(TF_CHECK_ENV) $(TERRAFORM) -chdir=$(TF_CHECK_DIR) init -backend=false >$(TF_CHECK_DIR)/init.log || { cat $(TF_CHECK_DIR)/init.log; exit 1; })
	@$(call timed,azurerm pinned to $(AZURERM_VERSION) (terraform.tf; init selected it),bash $(INFRA)/scripts/provider-pin_test.sh && $(TF_CHECK_ENV) $(TERRAFORM) -chdir=$(TF_CHECK_DIR) version -json >$(TF_CHECK_DIR)/version.json && grep -q '"registry.terraform.io/hashicorp/azurerm": "$(AZURERM_VERSION)"' $(TF_CHECK_DIR)/version.json)
	@$(call timed,terraform validate,$(TF_CHECK_ENV) $(TERRAFORM) -chdir=$(TF_CHECK_DIR) validate -no-color)
	@$(call timed,terraform test (mock_provider plan),$(TF_CHECK_ENV) $(TERRAFORM) -chdir=$(TF_CHECK_DIR) test -no-color -test-directory=tests/unit)
	@$(call timed,destroy plan with no TF_VAR_* (deploy.sh destroy args),$(TF_CHECK_ENV) TERRAFORM=$(TERRAFORM) bash $(INFRA)/scripts/destroy-plan_test.sh $(TF_CHECK_DIR))
	@$(call timed,Azure suite copy of infra/ plans (its variables),$(TF_CHECK_ENV) BLOBLEADER_TF_REHEARSAL=1 TERRAFORM=$(TERRAFORM) $(GO) -C $(ROOT)/test test -tags azure -count=1 -v -timeout 10m -run '^TestRehearsal_' ./azure/ >$(TF_CHECK_DIR)/rehearsal.log 2>&1 && grep -q -- '--- PASS: TestRehearsal_SuitePlansTheCopiedInfra' $(TF_CHECK_DIR)/rehearsal.log || { cat $(TF_CHECK_DIR)/rehearsal.log; exit 1; })
	@$(call timed,examples/default init+validate,$(TF_CHECK_ENV) $(TERRAFORM) -chdir=$(TF_CHECK_DIR)/examples/default init -backend=false >/dev/null && $(TF_CHECK_ENV) $(TERRAFORM) -chdir=$(TF_CHECK_DIR)/examples/default validate -no-color)
	@$(call timed,ci identity init+validate,$(TF_CHECK_ENV) $(TERRAFORM) -chdir=$(TF_CHECK_DIR)/ci init -backend=false >/dev/null && $(TF_CHECK_ENV) $(TERRAFORM) -chdir=$(TF_CHECK_DIR)/ci validate -no-color)
	@$(call timed,ci identity terraform test (mock_provider plan),$(TF_CHECK_ENV) $(TERRAFORM) -chdir=$(TF_CHECK_DIR)/ci test -no-color -test-directory=tests/unit)
	@$(call timed,tflint (ruleset azurerm $(TFLINT_AZURERM_VERSION)),TFLINT_PLUGIN_DIR=$(TFLINT_PLUGIN_DIR) $(TFLINT) --chdir=$(INFRA) --config=$(INFRA)/.tflint.hcl --recursive --no-color)
	@$(call timed,tfsec,$(TFSEC) $(INFRA) --no-color --concise-output --exclude-downloaded-modules)
	@$(call timed,actionlint $(ACTIONLINT_VERSION) (.github/workflows),$(ACTIONLINT_RUN))
	@$(call timed,workflow env: rule (no expression in a run script),bash $(INFRA)/scripts/workflow-env-rule_test.sh)
	@$(call timed,azure workflow uploads after the teardown,bash $(INFRA)/scripts/workflow-order_test.sh)
	@$(call timed,deploy.sh dry run (stubbed az/terraform/go),bash $(INFRA)/scripts/deploy_test.sh)
	@$(call timed,provider-mirror.sh (file:// module proxy),bash $(INFRA)/scripts/provider-mirror_test.sh)

# The platforms whose registry hashes the committed lock file records.
TF_LOCK_PLATFORMS := linux_amd64 linux_arm64 darwin_amd64 darwin_arm64 windows_amd64

.PHONY: tf-lock
tf-lock: ## Write infra/.terraform.lock.hcl and infra/ci/.terraform.lock.hcl from the Terraform registry (needs it): the pinned azurerm, hashes for linux and darwin (amd64, arm64) and windows_amd64.
	@for d in $(INFRA) $(INFRA)/ci; do \
	  echo ">> terraform providers lock ($$d)"; \
	  $(TERRAFORM) -chdir=$$d providers lock $(addprefix -platform=,$(TF_LOCK_PLATFORMS)); done
	@bash $(INFRA)/scripts/provider-pin_test.sh

.PHONY: tf-provider
tf-provider: $(AZURERM_MIRROR) $(TF_OFFLINE_RC) ## Put the azurerm provider (built from source, cached in $CACHE) into the offline filesystem mirror.

# Reuses a finished build in $(AZURERM_BUILD) (or waits for one in progress),
# otherwise runs the `go install` itself; see infra/scripts/provider-mirror.sh.
$(AZURERM_MIRROR):
	@GO=$(GO) bash $(INFRA)/scripts/provider-mirror.sh "$(AZURERM_MODULE)" "$(AZURERM_GOVERSION)" "$(AZURERM_BUILD)" "$@"

$(TF_OFFLINE_RC):
	@mkdir -p $(@D)
	@printf '%s\n' \
	  '# Generated by infra/infra.mk for the offline checks only (TF_CLI_CONFIG_FILE).' \
	  'provider_installation {' \
	  '  filesystem_mirror {' \
	  '    path    = "$(TF_MIRROR)"' \
	  '    include = ["registry.terraform.io/hashicorp/azurerm"]' \
	  '  }' \
	  '  direct {' \
	  '    exclude = ["registry.terraform.io/hashicorp/azurerm"]' \
	  '  }' \
	  '}' >$@

$(TFLINT):
	$(call go-install-tool,$@,github.com/terraform-linters/tflint,$(TFLINT_VERSION))

# Only v0.27.0 of the ruleset resolves through the module proxy; it is not in the
# checksum database, hence GONOSUMDB for exactly that module.
$(TFLINT_AZURERM):
	@echo ">> build tflint-ruleset-azurerm@$(TFLINT_AZURERM_VERSION)"
	@mkdir -p $(@D)
	@dir=$$(GONOSUMDB=github.com/terraform-linters/tflint-ruleset-azurerm $(GO) mod download -json \
	    github.com/terraform-linters/tflint-ruleset-azurerm@$(TFLINT_AZURERM_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p'); \
	  [ -n "$$dir" ] || { echo "tflint-ruleset-azurerm: go mod download gave no directory"; exit 1; }; \
	  cd "$$dir" && GOFLAGS=-buildvcs=false GONOSUMDB=github.com/terraform-linters/tflint-ruleset-azurerm \
	    $(GO) build -trimpath -o $@.tmp . && mv $@.tmp $@

$(TFSEC):
	$(call go-install-tool,$@,github.com/aquasecurity/tfsec/cmd/tfsec,$(TFSEC_VERSION))

$(ACTIONLINT):
	$(call go-install-tool,$@,github.com/rhysd/actionlint/cmd/actionlint,$(ACTIONLINT_VERSION))

.PHONY: actionlint
actionlint: $(ACTIONLINT) ## Lint the GitHub workflows with the pinned actionlint (also part of test-infra).
	$(ACTIONLINT_RUN)

.PHONY: infra-tools
infra-tools: $(TFLINT) $(TFLINT_AZURERM) $(TFSEC) $(ACTIONLINT) ## Install the pinned tflint, its azurerm ruleset, tfsec and actionlint into ./bin.

.PHONY: image
image: ## Build the worker image without Docker (static /blobleader, /status linked to it, CA bundle, user 65532) as an OCI layout in out/image.
	@mkdir -p $(dir $(WORKER_LINUX))
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -ldflags='-s -w' -o $(WORKER_LINUX) ./worker/cmd/blobleader
	$(GO) -C infra/image run . build --binary $(WORKER_LINUX) $(if $(CA_BUNDLE),--ca-bundle $(CA_BUNDLE)) --out $(IMAGE_DIR)

.PHONY: test-image
test-image: ## Test the image builder (builds an image, checks entrypoint, user, platform, runs the binary's --help).
	$(GO) -C infra/image test -count=1 -timeout 5m ./...

DEPLOY_ENV := AZURE_LOCATION=$(AZURE_LOCATION) WORKER_COUNT=$(WORKER_COUNT) TERRAFORM=$(TERRAFORM) GO=$(GO)

.PHONY: deploy
deploy: ## Deploy to Azure (AZURE_LOCATION, WORKER_COUNT): storage, identity, registry; push the image by digest; worker groups; wait for a leader.
	@$(DEPLOY_ENV) bash $(INFRA)/scripts/deploy.sh preflight deploy
	@$(MAKE) image
	@$(DEPLOY_ENV) bash $(INFRA)/scripts/deploy.sh deploy

.PHONY: destroy
destroy: ## Remove everything `make deploy` created (resource group, storage with ledger and history, registry, identity, logs).
	@$(DEPLOY_ENV) bash $(INFRA)/scripts/deploy.sh destroy
