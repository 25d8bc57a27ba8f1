# terraform-provider-dify — developer entry points. `make help` lists them.
# Every target works from a clean clone with only Go installed: the scripts
# build Terraform, OpenTofu and GoReleaser into a cache outside the repo
# (${XDG_CACHE_HOME:-~/.cache}/terraform-provider-dify) the first time.

SHELL := /usr/bin/env bash
# Under pipefail a pipeline into a reader that stops early (head, grep -q)
# fails with 141 when the writer is still writing: read it all (sed -n 1p).
# scripts/pipefail_test.go checks the recipes and scripts for such pipelines.
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

BIN_DIR  ?= bin
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null | sed 's/^v//')
COMMIT   ?= $(shell git rev-parse --short HEAD 2>/dev/null)
ifeq ($(strip $(VERSION)),)
VERSION  := dev
endif
ifeq ($(strip $(COMMIT)),)
COMMIT   := none
endif
LDFLAGS  := -X main.version=$(VERSION) -X main.commit=$(COMMIT) \
            -X github.com/difyops/terraform-provider-dify/dify.Version=$(VERSION)
FUZZTIME ?= 60s

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "; printf "Usage: make <target>\n\nTargets:\n"} \
		/^[a-zA-Z0-9_-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)
	@printf '\nVariables: FUZZTIME=%s (fuzz), BIN_DIR=%s (build), TEST_SKIP="stage ..." (test), MOCK_ARGS (mock)\n' '$(FUZZTIME)' '$(BIN_DIR)'

.PHONY: demo
demo: ## Build everything and run the quickstart against dify-mock (one command, nothing left running)
	@scripts/demo.sh

.PHONY: test
test: ## All checks: gofmt, vet, go test -race, acceptance tests (TF_ACC), docs, examples, goreleaser check
	@scripts/test.sh

.PHONY: build
build: ## Build the provider and dify-mock into ./bin
	@mkdir -p $(BIN_DIR)
	go build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN_DIR)/terraform-provider-dify .
	go build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN_DIR)/dify-mock ./mockserver/cmd/dify-mock
	@echo "built $(BIN_DIR)/terraform-provider-dify and $(BIN_DIR)/dify-mock ($(VERSION))"

.PHONY: docs
docs: ## Regenerate docs/ (go generate ./..., tfplugindocs; needs a Terraform >= 1.11 for write-only attributes: found or built)
	@tf="$$(scripts/ensure-terraform-1.14.sh | tail -n1)"; \
	 PATH="$$(dirname "$$tf"):$$PATH" go generate ./...

.PHONY: release-check
release-check: ## goreleaser check + an offline snapshot build for this machine into ./dist, then dify-mock's image and npm packages from it, the image run in Podman
	@gr="$$(scripts/ensure-goreleaser.sh | tail -n1)"; \
	 "$$gr" check; \
	 "$$gr" build --snapshot --clean --single-target; \
	 scripts/dist-packages.sh dist; \
	 tar="$$(ls -t dist/dify-mock-image_*.tar 2>/dev/null | sed -n 1p)"; \
	 if [[ -n "$$tar" ]]; then scripts/container-test.sh --image "$$tar" || [[ $$? == 3 ]]; fi

.PHONY: image
image: ## Build dify-mock's container image without a container daemon: ./dist/image (OCI layout) and ./dist/dify-mock-image_<version>.tar
	@for arch in amd64 arm64; do \
	   CGO_ENABLED=0 GOOS=linux GOARCH=$$arch go build -trimpath -ldflags '-s -w $(LDFLAGS)' \
	     -o dist/image-binaries/linux_$$arch/dify-mock ./mockserver/cmd/dify-mock; \
	 done
	SOURCE_DATE_EPOCH="$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct 2>/dev/null || echo 0)}" \
	go run ./distribution/image --version '$(VERSION)' --revision '$(COMMIT)' \
	  --binary linux/amd64=dist/image-binaries/linux_amd64/dify-mock --binary linux/arm64/v8=dist/image-binaries/linux_arm64/dify-mock \
	  --out dist/image --tar dist/dify-mock-image_$(VERSION).tar

.PHONY: container-test
container-test: ## Run the image and its examples (compose, GitHub Actions, docs) in Podman, installed from Debian if missing
	@scripts/container-test.sh

.PHONY: npm
npm: ## Build the npm packages for this machine into ./dist/npm, packed into dist/npm/tarballs (NPM_PLATFORMS=linux-x64,darwin-arm64 for others)
	@v='$(VERSION)'; [[ "$$v" =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]] || v='0.0.0-dev.g$(COMMIT)'; \
	 node distribution/npm/build.js --version "$$v" --commit '$(COMMIT)' --out dist/npm --go-build --pack $(if $(NPM_PLATFORMS),--platforms '$(NPM_PLATFORMS)'); \
	 echo "built the npm packages $$v: $$(cd dist/npm/tarballs && echo *.tgz) in dist/npm/tarballs"

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each (default 60s)
	@FUZZTIME='$(FUZZTIME)' scripts/fuzz.sh

.PHONY: mock
mock: build ## Build and run dify-mock in the foreground (Ctrl-C stops it; MOCK_ARGS="--speed 0" passes flags)
	@exec $(BIN_DIR)/dify-mock $(MOCK_ARGS)

.PHONY: soak
soak: ## Soak the mock with mixed traffic for SOAK_DURATION (default 30m); figures go to bench/results.md by hand
	SOAK_DURATION='$(or $(SOAK_DURATION),30m)' go test -count=1 -timeout 2h -run '^TestSoak$$' -v ./mockserver/ | grep -E '_test\.go:[0-9]+:|^(---|ok|FAIL|PASS|panic)'

.PHONY: lint
lint: ## staticcheck ./... (built into the tool cache the first time)
	@scripts/test.sh lint

.PHONY: bench
bench: ## Run the benchmarks (scripts/bench.sh)
	@scripts/bench.sh

.PHONY: terraform
terraform: ## Find or build Terraform >= 1.5 and print its path
	@scripts/ensure-terraform.sh

.PHONY: tofu-test
tofu-test: ## Only the acceptance tests, against OpenTofu 1.10.6 (built from source the first time, ~8 min; make test runs them too)
	@tofu="$$(scripts/ensure-tofu.sh | tail -n1)"; \
	 TF_ACC=1 TF_ACC_TERRAFORM_PATH="$$tofu" TF_ACC_PROVIDER_HOST=registry.opentofu.org TF_ACC_PROVIDER_NAMESPACE=hashicorp TF_CLI_CONFIG_FILE=/dev/null CHECKPOINT_DISABLE=1 \
	   go test -count=1 -timeout 30m ./provider/... -run '^TestAcc'

.PHONY: clean
clean: ## Remove build output (./bin, ./dist); the tool cache is kept
	rm -rf $(BIN_DIR) dist
	@echo "kept the tool cache; remove it with: rm -rf \"$${XDG_CACHE_HOME:-$$HOME/.cache}/terraform-provider-dify\""
