# Chaos suite and benchmarks (owned by test/; included from the top Makefile).
#
# The short chaos suite (each scenario once, the negative control, a 60 s soak)
# is part of `go test ./...`, so `make test` runs it. `make chaos` runs the long
# one: each scenario REPEAT times plus a seeded soak of DURATION, with reports
# (JSON summary, SVG/HTML timeline, histories and logs) in CHAOS_OUT.

##@ Chaos

DURATION   ?= 10m
SEED       ?= $(shell date +%s)
REPEAT     ?= 3
CHAOS_OUT  ?= $(ROOT)/out/chaos
CHAOS_RUN  ?= .
# go test's -timeout, a bound well above the run's length, never an
# estimate of it: twice the soak's minutes (DURATION as Nh, Nm or Ns;
# anything else counts as 2 h: four soaks, election, early takeover, run and
# shard mode, run two at a time), plus 10 min per repetition of the scenarios (one
# repetition of all of them takes about 13 min of wall time two at a time on
# 2 cores), plus 20 min margin. At the defaults 70 min; the 5-min-per-
# repetition rule it replaces gave 50 min, and a default run took 49.6 min
# on a loaded machine.
CHAOS_TIMEOUT ?= $(shell d='$(DURATION)'; case $$d in (*[hm]?*) m=120;; (*h) m=$$(( $${d%h} * 60 ));; (*m) m=$${d%m};; (*s) m=$$(( $${d%s} / 60 + 1 ));; (*) m=120;; esac; echo $$(( 2 * m + 10 * $(REPEAT) + 20 ))m)

.PHONY: chaos
chaos: node_modules ## Long chaos suite: every scenario REPEAT times (3) and four seeded soaks (DURATION=10m SEED=…); reports in out/chaos. Takes about 10 min per REPEAT + 2 × DURATION on 2 cores (the defaults took 50 min); bounded by CHAOS_TIMEOUT (70 min at the defaults).
	@case '$(DURATION)' in ([0-9]*[smh]) d='$(DURATION)'; case $${d%?} in (*[!0-9]*) echo "invalid DURATION=$(DURATION): must be a whole number of seconds, minutes or hours, e.g. 10m"; exit 2;; esac;; (*) echo "invalid DURATION=$(DURATION): must be a whole number of seconds, minutes or hours, e.g. 10m"; exit 2;; esac
	@case '$(REPEAT)' in ([1-9]|[1-9]*[0-9]) case '$(REPEAT)' in (*[!0-9]*) echo "invalid REPEAT=$(REPEAT): must be a whole number ≥ 1, e.g. 3"; exit 2;; esac;; (*) echo "invalid REPEAT=$(REPEAT): must be a whole number ≥ 1, e.g. 3"; exit 2;; esac
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/blobleader ./worker/cmd/blobleader
	rm -rf $(CHAOS_OUT) && mkdir -p $(CHAOS_OUT)
	@echo ">> chaos: DURATION=$(DURATION) SEED=$(SEED) REPEAT=$(REPEAT) timeout $(CHAOS_TIMEOUT), reports in $(CHAOS_OUT)"
	@rc=0; \
	BLOBLEADER_WORKER_BIN=$(BIN)/blobleader \
	BLOBLEADER_CHAOS_DURATION=$(DURATION) \
	BLOBLEADER_CHAOS_SEED=$(SEED) \
	BLOBLEADER_CHAOS_REPEAT=$(REPEAT) \
	BLOBLEADER_CHAOS_OUT=$(CHAOS_OUT) \
	$(GO) -C test test -count=1 -v -timeout $(CHAOS_TIMEOUT) -run '$(CHAOS_RUN)' ./scenarios 2>&1 | tee $(CHAOS_OUT)/go-test.log \
	  | grep --line-buffered -E '^\s*(--- |PASS|FAIL|ok )|violation|inconclusive|soak (step|summary|steps)|storage probe|failover after|^\s+(duration|kind|[a-z_]+ +[0-9])' || rc=$$?; \
	echo ">> soak summary ($(CHAOS_OUT)/TestElection_SeededSoak.txt):"; \
	cat $(CHAOS_OUT)/TestElection_SeededSoak.txt 2>/dev/null || echo "(no soak in this run)"; \
	echo ">> early-takeover soak summary ($(CHAOS_OUT)/TestTakeover_SeededSoak.txt):"; \
	cat $(CHAOS_OUT)/TestTakeover_SeededSoak.txt 2>/dev/null || echo "(no early-takeover soak in this run)"; \
	echo ">> run-mode soak summary ($(CHAOS_OUT)/TestRun_SeededSoak.txt):"; \
	cat $(CHAOS_OUT)/TestRun_SeededSoak.txt 2>/dev/null || echo "(no run-mode soak in this run)"; \
	echo ">> shard-mode soak summary ($(CHAOS_OUT)/TestShards_SeededSoak.txt):"; \
	cat $(CHAOS_OUT)/TestShards_SeededSoak.txt 2>/dev/null || echo "(no shard-mode soak in this run)"; \
	echo ">> reports: $(CHAOS_OUT)/*.html; full log: $(CHAOS_OUT)/go-test.log"; \
	exit $$rc

.PHONY: test-chaos
test-chaos: node_modules ## Short chaos suite only: fault, cluster and scenario tests (each scenario once).
	$(GO) -C chaos test -count=1 -timeout 15m ./...
	$(GO) -C test test -count=1 -timeout 15m ./cluster/... ./scenarios/...
