# Thin Makefile: every real step lives in Go code or in hack/ scripts.
GO        ?= go
BIN       := bin
PKGS      := ./...
# Packages whose tests run without -race: internal/image builds the image
# twice and gzips ~120 MB of layers in-process, which the race detector's
# instrumentation of compress/flate made take 290-340 s under load, and
# 600+ s (go test's timeout) with two more `make test` runs beside it.
# internal/release builds the image twice too (a release, twice).
NORACE    := github.com/railyard-io/railyard/internal/image github.com/railyard-io/railyard/internal/release
TOOLS     := _output/tools
# Image version (default: the chart's appVersion), revision and creation
# time (the commit's): one commit always gives the same image digest.
VERSION   ?= $(shell sed -n 's/^appVersion: *"*\([^"]*\)"*/\1/p' deploy/helm/railyard/Chart.yaml)
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
IMAGE_ARCH ?= $(shell $(GO) env GOARCH)

.PHONY: all build demo test unit lint archgraph e2e vmtest bench fuzz tools deps cni-tools images images-infiniband manifests release clean

all: build

## build: compile railyard, railyard-agent and railyard-cni into bin/ (railyard version: VERSION and REVISION)
build:
	$(GO) build -ldflags "-X github.com/railyard-io/railyard/internal/version.version=$(VERSION) -X github.com/railyard-io/railyard/internal/version.revision=$(REVISION)" -o $(BIN)/ ./cmd/...

## demo: build, show the topology of a built-in DGX H100 model, then 32 such nodes under kubelet's random allocation order: kubelet's own NIC choice vs Railyard's (GPUDirect share, modelled GB/s per GPU)
demo: build
	$(BIN)/railyard topo --machine dgx-h100
	@echo
	$(BIN)/railyard simulate --machine dgx-h100 --nodes 32 --pods 5000 --policies kubelet,gpu-aware,late-bound

## test: lint, unit tests with the race detector, the end-to-end suite and the real-kernel tests in a VM; set-up first, then three lanes side by side (lint+unit, e2e, vmtest), each stage's time printed at the end (hack/test.sh; TEST_STAGES, TEST_SERIAL)
test:
	hack/test.sh

## unit: every Go test with -race (netns tests need root and skip without it), but internal/image's and internal/release's without it (NORACE)
unit: deps cni-tools
	$(GO) test -race -count=1 $(shell $(GO) list $(PKGS) | grep -vxF $(foreach p,$(NORACE),-e '$(p)'))
	$(GO) test -count=1 $(NORACE)

## lint: gofmt, go vet and golangci-lint (.golangci.yml: staticcheck, errorlint, depguard; pinned in hack/tools.sh), e2e-tagged files included
lint: tools
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet -tags e2e $(PKGS)
	# --allow-parallel-runners: another checkout's lint on the same machine
	# waits for the shared cache's lock instead of failing this one.
	$(TOOLS)/golangci-lint run --allow-parallel-runners $(PKGS)

## archgraph: regenerate docs/architecture.md's package graph from the code's imports (test/arch fails while they differ)
archgraph:
	$(GO) run ./hack/archgraph -w

## tools: install pinned Go tools into _output/tools
tools:
	hack/tools.sh

## deps: install the Debian packages the tests need (iproute2, lldpd; hack/install-deps.sh)
deps:
	hack/install-deps.sh

## cni-tools: install the reference cnitool, host-local and host-device
cni-tools:
	hack/install-cni-tools.sh

## images: the OCI image archive _output/images/railyard-$(VERSION)-$(IMAGE_ARCH).tar (no Docker daemon; ctr import / docker load)
images:
	$(GO) run ./hack/image --version $(VERSION) --revision $(REVISION) --created $(SOURCE_DATE_EPOCH) --arch $(IMAGE_ARCH)

## images-infiniband: the same image plus a layer with infiniband-diags' smpquery from pinned Debian packages (downloaded once into _output/debs, SHA256-checked): _output/images/railyard-$(VERSION)-infiniband-diags-$(IMAGE_ARCH).tar, for the chart's fabric.infiniband.enabled (docs/fabric.md)
images-infiniband:
	$(GO) run ./hack/image --infiniband-diags --version $(VERSION) --revision $(REVISION) --created $(SOURCE_DATE_EPOCH) --arch $(IMAGE_ARCH)

## release: cut release VERSION (required: make release VERSION=X.Y.Z [OUT=dir]) into OUT (default _output/release/VERSION): image archives for amd64 and arm64 and their infiniband-diags variants, a CycloneDX SBOM per image, the chart railyard-VERSION.tgz, SHA256SUMS; the same bytes on every run of one commit (hack/release, docs/release.md)
release:
	@if [ "$(origin VERSION)" = file ]; then echo "make release: give the version: make release VERSION=X.Y.Z [OUT=dir]" >&2; exit 2; fi
	$(GO) run ./hack/release --version $(VERSION) --revision $(REVISION) --created $(SOURCE_DATE_EPOCH) --out $(or $(OUT),_output/release/$(VERSION))

## manifests: render deploy/*.yaml from the Helm chart deploy/helm/railyard (a go test fails when they drift)
manifests:
	$(GO) run ./hack/manifests

## e2e: the end-to-end suite against a real kubelet, CNI tools and netns
e2e:
	hack/e2e.sh

## vmtest: real-kernel tests (SR-IOV VFs, RDMA) in a QEMU VM; SKIP without QEMU (hack/vm/install.sh)
vmtest:
	hack/vm/test.sh

## bench: every Go benchmark once, output in _output/bench.txt
bench:
	mkdir -p _output
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS) | tee _output/bench.txt

## fuzz: run each fuzz target for a short while
fuzz:
	hack/fuzz.sh

clean:
	rm -rf $(BIN) _output
