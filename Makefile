# Thin Makefile: every real step lives in Go code or in hack/ scripts.
GO        ?= go
BIN       := bin
PKGS      := ./...
STATICCHECK_VERSION := 2025.1.1

.PHONY: all build demo test unit lint e2e bench fuzz tools clean

all: build

## build: compile railyard, railyard-agent and railyard-cni into bin/
build:
	$(GO) build -o $(BIN)/ ./cmd/...

## demo: build and show the topology of a built-in DGX H100 model
demo: build
	$(BIN)/railyard topo --machine dgx-h100

## test: lint, unit tests with the race detector, and the end-to-end suite
test: lint unit e2e

## unit: every Go test with -race (netns tests need root and skip without it)
unit:
	$(GO) test -race -count=1 $(PKGS)

## lint: go vet and staticcheck (pinned)
lint:
	$(GO) vet $(PKGS)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) $(PKGS)

## e2e: the end-to-end suite against a real kubelet, CNI tools and netns
e2e:
	hack/e2e.sh

## bench: every Go benchmark once, output in _output/bench.txt
bench:
	mkdir -p _output
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS) | tee _output/bench.txt

## fuzz: run each fuzz target for a short while
fuzz:
	hack/fuzz.sh

clean:
	rm -rf $(BIN) _output
