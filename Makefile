# gojev: build llama.cpp once (cached), build jev, fetch the default model, run the tests.
#
#   make            native libraries (cached under ~/.cache/gojev) + bin/jev
#   make demo       decide examples/tickets.jsonl with the default model
#   make eval ROWS=rows.jsonl   decide a labelled row file and print the summary
#   make test       the whole test suite, including tests on the real default model
#   make soak       10,000 decisions in one process: RSS growth after warm-up (a CI step)
#
# GOJEV_CUDA=1 / GOJEV_METAL=1 build a GPU backend (untested here); GOJEV_CACHE moves the cache;
# LLAMA_CPP_DIR uses your own llama.cpp checkout; JEV_MODEL uses your own model.

SHELL := /bin/bash
GO ?= go
TAGS :=
ifeq ($(GOJEV_CUDA),1)
TAGS := -tags cuda
endif
ifeq ($(GOJEV_METAL),1)
TAGS := -tags metal
endif
ROWS ?= examples/tickets.jsonl
THREADS ?= $(shell nproc 2>/dev/null || sysctl -n hw.ncpu)
JEV := bin/jev

.PHONY: all native model build demo eval test soak vet clean help

all: build

help:
	@sed -n '1,11p' Makefile | sed 's/^# \{0,1\}//'

native:
	@./third_party/build-native.sh >/dev/null

model:
	@./scripts/fetch-model.sh >/dev/null

build: native
	$(GO) build $(TAGS) -o $(JEV) ./cmd/jev

demo: build model
	$(JEV) decide -m "$$(./scripts/fetch-model.sh)" -t $(THREADS) -i examples/tickets.jsonl

eval: build model
	@mkdir -p out
	$(JEV) decide -m "$$(./scripts/fetch-model.sh)" -t $(THREADS) -i $(ROWS) -o out/eval.jsonl
	@echo "results: out/eval.jsonl"

test: native model
	@python3 -c 'import jinja2' 2>/dev/null || python3 -m pip install --quiet 'jinja2==3.1.6'
	@[ -d ../shared/data ] || [ -n "$$GOJEV_SHARED_DATA" ] || echo "note: no ../shared/data beside this clone: the tests that need it skip (go test -v says which); CI=true makes them fail instead"
	JEV_MODEL="$$(./scripts/fetch-model.sh)" $(GO) test $(TAGS) -count=1 ./...

soak: native model
	JEV_SOAK_DECISIONS=$${JEV_SOAK_DECISIONS:-10000} JEV_MODEL="$$(./scripts/fetch-model.sh)" $(GO) test $(TAGS) -count=1 -timeout 40m -run '^TestSoak$$' -v ./decide/

vet: native
	$(GO) vet $(TAGS) ./...

clean:
	rm -rf bin out third_party/native
