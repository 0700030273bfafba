# Terraform checks, image build and Azure deployment (owned by infra/; included from the top Makefile).
.PHONY: test-infra
test-infra: ## Offline Terraform checks (fmt, validate, terraform test with mock_provider).
	@echo "test-infra: no Terraform yet"
