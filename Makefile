# blobleader — leader election on Azure Blob Storage leases.
# `make` (or `make help`) lists the targets. Every tool the targets need is
# installed by the targets themselves, pinned, into ./bin or ./node_modules.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory

ROOT     := $(CURDIR)
BIN      := $(ROOT)/bin
GO       ?= go
# The Go modules: the product a user imports (the root: library + blobleader
# binary) and the harness, which replaces the root with ../ so that a library
# consumer never inherits terratest, toxiproxy or the ARM SDKs.
GO_MODULES := . chaos test infra/image
export GOFLAGS := -buildvcs=false
# Cache for slow, machine-wide artefacts (the offline Terraform provider).
CACHE    ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/blobleader
# A TF_CLI_CONFIG_FILE from the environment that names a missing file only
# makes every Terraform command warn; don't pass it on. (The offline checks
# set their own, generated one.)
ifneq ($(TF_CLI_CONFIG_FILE),)
ifeq ($(wildcard $(TF_CLI_CONFIG_FILE)),)
unexport TF_CLI_CONFIG_FILE
endif
endif

##@ General

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} \
	  /^[a-zA-Z0-9_.-]+:.*?##/ { printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2 } \
	  /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Local (Azurite)

node_modules/.installed: package.json package-lock.json
	@echo ">> npm ci (Azurite, pinned in package-lock.json)"
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

.PHONY: node_modules
node_modules: node_modules/.installed ## Install the pinned Azurite from npm.

.PHONY: build
build: ## Build the blobleader binary and the demo into ./bin.
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/blobleader ./worker/cmd/blobleader
	$(GO) -C test build -o $(BIN)/demo ./demo

.PHONY: demo
demo: build node_modules ## Start Azurite and three workers; watch who leads, kill the leader, watch the takeover.
	$(BIN)/demo --worker $(BIN)/blobleader

.PHONY: demo-run
demo-run: build node_modules ## The demo in run mode: each worker is `blobleader run -- sleep …`; kill the leader's command (c) and watch a ~1 s takeover.
	$(BIN)/demo --worker $(BIN)/blobleader --run

.PHONY: demo-shards
demo-shards: build node_modules ## The demo in shard mode: each worker is `blobleader --shards 8`; watch who owns which shard, kill a follower (f) and watch its shards move.
	$(BIN)/demo --worker $(BIN)/blobleader --shards 8

##@ Tests

# A hang guard per package, not a budget: a busy machine slows the test
# module's scenarios past 15 min (901 s at load 14-18), a quiet one takes
# about 11.
GO_TEST_TIMEOUT ?= 30m
# Tests run in parallel within a package: 4 at a time instead of GOMAXPROCS
# (2 here). The chaos scenarios spend their time waiting out lease timers,
# not on the CPU (load average stayed under 1 with 4 shard clusters running),
# so 4 at a time keeps `make test` near 8 minutes on 2 cores.
GO_TEST_PARALLEL ?= 4

.PHONY: test
test: node_modules test-go test-rules test-kql test-azure-offline test-infra ## Run every offline test: Go unit + Azurite integration + short chaos suite, the Prometheus rule tests, the alert queries' check, the Azure suite's offline part, and the Terraform checks.

# A chaos scenario whose verdict is inconclusive (a timing bound missed by
# no more than the machine's measured stall) is retried; each retry appends
# a line here, and test-go prints the file at the end, pass or fail, since
# go test shows nothing of a passing test (docs/chaos.md#a-busy-machine).
RETRY_LOG ?= $(ROOT)/out/test-retries.log
# A failed scenario keeps its evidence here (histories, logs, client lines,
# probe records), so a red run can be read after its temp dirs are gone;
# test-go names what it holds at the end.
KEEP_FAILED ?= $(ROOT)/out/failed

.PHONY: test-go
test-go: node_modules ## Go vet and tests in every module (unit, Azurite integration, short chaos suite, consumer-module check).
	@for m in $(GO_MODULES); do echo ">> go vet ($$m)"; $(GO) -C $$m vet ./...; done
	@mkdir -p $(dir $(RETRY_LOG)) && rm -f $(RETRY_LOG) && rm -rf $(KEEP_FAILED); \
	trap 'echo ">> inconclusive runs retried: $$(cat $(RETRY_LOG) 2>/dev/null | grep -c retrying) ($(RETRY_LOG))"; grep -h . $(RETRY_LOG) 2>/dev/null | sed "s/^/   /" || true; \
		if [ -d $(KEEP_FAILED) ]; then echo ">> failed runs kept in $(KEEP_FAILED):"; ls $(KEEP_FAILED) | sed "s/^/   /"; fi' EXIT; \
	for m in $(GO_MODULES); do echo ">> go test ($$m)"; BLOBLEADER_RETRY_LOG=$(RETRY_LOG) BLOBLEADER_CHAOS_KEEP_FAILED=$(KEEP_FAILED) \
		$(GO) -C $$m test -count=1 -parallel $(GO_TEST_PARALLEL) -timeout $(GO_TEST_TIMEOUT) ./...; done

# The busy machine a shared CI runner is (docs/chaos.md#a-busy-machine):
# stress-ng with CPU hogs at BUSY_CPU (3x the cores), one I/O hog (sync)
# and one memory hog of BUSY_VM_BYTES, for at most BUSY_TIMEOUT, while
# `make test` runs; the load average is sampled every 30 s into
# out/test-busy-load.log and summarised at the end.
BUSY_CPU      ?= $(shell echo $$(( 3 * $$(nproc) )))
BUSY_VM_BYTES ?= 512M
BUSY_TIMEOUT  ?= 90m

.PHONY: test-busy
test-busy: ## `make test` on a busy machine: under stress-ng (CPU hogs at 3x the cores, I/O and memory pressure); installs stress-ng with apt-get, or skips saying why.
	@if ! command -v stress-ng >/dev/null; then \
	  sudo=; [ "$$(id -u)" = 0 ] || sudo='sudo -n'; \
	  if command -v apt-get >/dev/null; then echo ">> installing stress-ng (Debian package) with apt-get"; \
	    { $$sudo apt-get update -qq && $$sudo apt-get install -y -qq stress-ng; } >/dev/null 2>&1 || true; fi; \
	fi; \
	if ! command -v stress-ng >/dev/null; then \
	  echo "test-busy: SKIPPED, not run: stress-ng is not installed and apt-get could not install it here (install stress-ng and run again)"; exit 0; \
	fi; \
	mkdir -p out; load=out/test-busy-load.log; : > $$load; \
	echo ">> stress-ng --cpu $(BUSY_CPU) --io 1 --vm 1 --vm-bytes $(BUSY_VM_BYTES) --timeout $(BUSY_TIMEOUT) ($$(nproc) cores), then make test"; \
	stress-ng --cpu $(BUSY_CPU) --io 1 --vm 1 --vm-bytes $(BUSY_VM_BYTES) --timeout $(BUSY_TIMEOUT) --quiet & stress=$$!; \
	( trap 'kill $$nap 2>/dev/null; exit 0' TERM; while :; do sleep 30 & nap=$$!; wait $$nap; echo "$$(date -u +%T) $$(cut -d' ' -f1-3 /proc/loadavg)" >> $$load; done ) >/dev/null 2>&1 & sampler=$$!; \
	trap 'kill $$sampler 2>/dev/null; kill -TERM $$stress 2>/dev/null; wait $$stress 2>/dev/null; \
	  awk "{ n++; s += \$$2; if (\$$2 > mx) mx = \$$2; if (mn == \"\" || \$$2 < mn) mn = \$$2 } END { if (n) printf \">> load average (1 min) under stress-ng: min %s, mean %.1f, max %s over %d samples ($$load)\n\", mn, s / n, mx, n }" $$load' EXIT; \
	sleep 5; $(MAKE) test

.PHONY: lint
lint: ## gofmt, go vet (every module), terraform fmt, no binaries tracked, and every docs link resolves.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@out=$$(git ls-files -z | xargs -0 -r grep -l --binary-files=binary -m1 -P '^\x7fELF' 2>/dev/null || true); \
	  if [ -n "$$out" ]; then echo "executables are tracked (build output belongs in bin/ or .gitignore):"; echo "$$out"; exit 1; fi
	@for m in $(GO_MODULES); do echo ">> go vet ($$m)"; $(GO) -C $$m vet ./...; done
	terraform fmt -check -recursive infra
	@echo ">> doclinks (relative Markdown links and docs/….md#anchors in Go comments)"; $(GO) -C test run ./cmd/doclinks -root $(ROOT)

.PHONY: tidy
tidy: ## go mod tidy in every module.
	@for m in $(GO_MODULES); do echo ">> go mod tidy ($$m)"; $(GO) -C $$m mod tidy; done

.PHONY: clean
clean: ## Remove build output.
	rm -rf $(BIN) out

##@ Code generation

# Dapr's gRPC messages for the lock service (worker/lockapi/daprpb), from
# Dapr's published proto at a pinned release (the Go module proxy serves
# github.com/dapr/dapr, protos included). Only lock.proto and metadata.proto
# are compiled: the messages the lock service answers with; the service's
# method names are constants in worker/lockapi/grpc.go. protoc is Debian's
# (apt-get install -y protobuf-compiler); protoc-gen-go is pinned to the
# protobuf runtime in go.mod.
DAPR_VERSION          := v1.18.0
PROTOC_GEN_GO_VERSION := v1.36.12
PROTOC_GEN_GO         := $(BIN)/protoc-gen-go-$(PROTOC_GEN_GO_VERSION)
DAPRPB                := worker/lockapi/daprpb

.PHONY: proto
proto: $(PROTOC_GEN_GO) ## Regenerate Dapr's lock and metadata messages (worker/lockapi/daprpb) from Dapr's proto at DAPR_VERSION.
	@command -v protoc >/dev/null || { echo "protoc not found: apt-get install -y protobuf-compiler"; exit 1; }
	@dir=$$($(GO) mod download -json github.com/dapr/dapr@$(DAPR_VERSION) | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p'); \
	  test -n "$$dir" || { echo "go mod download github.com/dapr/dapr@$(DAPR_VERSION) gave no directory"; exit 1; }; \
	  echo ">> protoc: $$dir/dapr/proto/runtime/v1/{lock,metadata}.proto -> $(DAPRPB)"; \
	  rm -f $(DAPRPB)/*.pb.go; \
	  protoc --plugin=protoc-gen-go=$(PROTOC_GEN_GO) -I "$$dir" \
	    --go_out=$(DAPRPB) --go_opt=paths=source_relative \
	    --go_opt=Mdapr/proto/runtime/v1/lock.proto=github.com/blobleader/blobleader/$(DAPRPB)';daprpb' \
	    --go_opt=Mdapr/proto/runtime/v1/metadata.proto=github.com/blobleader/blobleader/$(DAPRPB)';daprpb' \
	    dapr/proto/runtime/v1/lock.proto dapr/proto/runtime/v1/metadata.proto; \
	  mv $(DAPRPB)/dapr/proto/runtime/v1/*.pb.go $(DAPRPB)/ && rm -r $(DAPRPB)/dapr

$(PROTOC_GEN_GO):
	@echo ">> go install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)"
	@mkdir -p $(BIN); tmp=$$(mktemp -d); \
	  GOBIN=$$tmp $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION); \
	  mv $$tmp/protoc-gen-go $@; rm -rf $$tmp

include test/test.mk
include test/azure/azure.mk
include test/bench/bench.mk
include infra/infra.mk
include infra/monitoring/monitoring.mk
