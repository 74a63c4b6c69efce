# gojev: build llama.cpp once (cached), build jev, fetch the default model, run the tests.
#
#   make            native libraries (cached under ~/.cache/gojev) + bin/jev
#   make demo       decide examples/tickets.jsonl with the default model, one readable line a row
#   make eval ROWS=rows.jsonl [EVAL_FLAGS="--debias pride"]
#                   decide a labelled row file into out/eval.jsonl and report on it
#                   (out/eval.html: accuracy, F1, confusion, letters, calibration)
#   make model      fetch the default model once (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 1.1 GB)
#   make test       the whole test suite: the small test model for most tests, the default model
#                   for decision quality, parity with llama-server (built by make server); then,
#                   alone on the CPU, jev serve under a burst and a SIGTERM, and the System One
#                   clients people install against it (make sdk: typesafe-sdk, jev-eval and
#                   jev-grep, pinned in one venv)
#   make soak       10,000 decisions in one process: RSS growth after warm-up (a CI step)
#   make calibration  the held-out calibration figures: raw, PriDe and cyclic decided on the
#                   200-row Banking77 sample (fit) and on test-8opt.jsonl rows past it (CAL_HELD
#                   800 for raw and PriDe, CAL_HELD_CYCLIC 400 for cyclic), into CAL_OUT (out/cal),
#                   each run resumable; then jev calibrate fits the profile and scores it held
#                   out; about 5 hours on 2 cores (cyclic 17 s a row); measurements/cal/ keeps
#                   the runs so far (gunzip them into CAL_OUT to continue)
#   make knockout   the 77-option table: KO_ROWS (300) Banking77 rows with every intent an option,
#                   decided by the knockout, cut to 16 and to 8 options, and the first KO_SUB (100)
#                   with PriDe, with the length grouping and by the binary contract; all 300
#                   with no flags (the shortlist), 80 training rows (the fit of its shipped
#                   temperature, measurements/shortlist.py --ship) and 120 SOC rows of 40
#                   occupations (80 against the binary contract) by the shortlist, into KO_OUT
#                   (out/ko), each run resumable (rerun to continue); about 7.5 hours on 2 cores
#   make typed      the typed questions' figures (docs/typed-questions.md): choice and noul on 200
#                   held-out Banking77 rows, score on AFINN word sentiment in both rubric orders,
#                   into OUT (out/typed), resumable; about 40 minutes on 2 cores
#   make burst      jev serve measured as clients see it (docs/typed-questions.md): 48 requests of 8
#                   questions at once with --timeout 20s, then SIGTERM with 24 in flight, on
#                   BURST_MODEL (default, or small) with BURST_ROWS (48 Banking77 messages, 8 yes/no
#                   questions each), into BURST_OUT (out/burst/<model>); about 20 minutes on 2 cores
#                   with the default model (make test runs the same checks on the small model)
#   make fuzz       every Go fuzz target for FUZZTIME each (default 2m; .ci/run: 15s)
#   make transfer   whether a calibration profile and a PriDe prior fitted on Banking77 transfer
#                   to other tasks (16 options, SNIPS, Social IQa from PyPI bigbench, which PyPI
#                   no longer serves): ~3 hours; SETS="fit snips siqa" ROWS=150 for a part
#   make calibration-pool
#                   the default calibration (docs/calibration.md): POOL_ROWS (150) rows of MMLU,
#                   Social IQa, Rotten Tomatoes, NewsArticles, SOC occupations and news-sentence
#                   kinds from PyPI wheels decided with PriDe into POOL_OUT (out/tasks),
#                   resumable, then the label-free alternatives, the leave-one-task-out table and
#                   the shipped profile; about 2 hours on 2 cores
#   make noul-pool  the noul calibration (docs/calibration.md): 150 rows of seven public yes/no tasks
#                   from PyPI wheels and 200 held-out Banking77 yes/no questions, decided raw into
#                   NOUL_OUT (out/noul), resumable, then the leave-one-task-out table and the
#                   held-out gate (measurements/noul-pool.py); about 50 minutes on 2 cores
#   make plugin GPU=vulkan|cuda|metal
#                   fetch the prebuilt GPU backend plugin (sha256-verified) into the cache and
#                   print its path: jev --plugin PATH or GOJEV_PLUGINS=PATH loads it
#   make server     llama-server and llama-bench from the pinned llama.cpp (tests, jev parity/bench)
#   make parity     jev parity on examples/tickets.jsonl (ROWS=... for your own rows)
#   make bench      jev bench on ROWS (default the Banking77 sample when ../shared is there)
#
# GOJEV_CUDA=1 / GOJEV_METAL=1 build a GPU backend into the static libraries (untested here);
# GOJEV_CACHE moves the cache; LLAMA_CPP_DIR uses your own llama.cpp checkout; GOJEV_MODEL uses
# your own model; THREADS=N sets the decoding threads of demo, eval and the measurement targets
# (default: every CPU).
# Help: make help

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

.PHONY: all native server model model-small sdk plugin build demo eval parity bench burst test soak fuzz transfer calibration knockout typed noul-pool vet clean help

all: build

help:
	@sed '/^[^#]/,$$d' Makefile | sed 's/^# \{0,1\}//'

native:
	@./third_party/build-native.sh >/dev/null

server:
	@./third_party/build-native.sh server >/dev/null

model:
	@./scripts/fetch-model.sh >/dev/null

model-small:
	@./scripts/fetch-model.sh small >/dev/null

sdk:
	@./scripts/sdk-venv.sh >/dev/null

GPU ?= vulkan
plugin:
	@./third_party/fetch-plugin.sh $(GPU)

build: native
	$(GO) build -buildvcs=auto $(TAGS) -o $(JEV) ./cmd/jev

demo: build model
	$(JEV) decide -m "$$(./scripts/fetch-model.sh)" -t $(THREADS) -i examples/tickets.jsonl --format text

EVAL_FLAGS ?=
eval: build model
	@mkdir -p out
	$(JEV) decide -m "$$(./scripts/fetch-model.sh)" -t $(THREADS) -i $(ROWS) -o out/eval.jsonl $(EVAL_FLAGS)
	$(JEV) report out/eval.jsonl --html out/eval.html --json out/eval.report.json

parity: build server model
	$(JEV) parity -m "$$(./scripts/fetch-model.sh)" -t $(THREADS) -i $(ROWS)

BENCH_ROWS ?= $(if $(wildcard ../shared/data/banking77/sample-200-8opt.jsonl),../shared/data/banking77/sample-200-8opt.jsonl,examples/tickets.jsonl)
bench: build server model
	@mkdir -p out
	$(JEV) bench -m "$$(./scripts/fetch-model.sh)" -t $(THREADS) -i $(BENCH_ROWS) -o out/bench.json $(BENCH_FLAGS)

BURST_MODEL ?= default
BURST_OUT ?= out/burst/$(BURST_MODEL)
BURST_ROWS ?= $(BURST_OUT)/intents48.jsonl
burst: build model model-small
	@mkdir -p $(BURST_OUT)
	@[ -f $(BURST_ROWS) ] || python3 scripts/typed-rows.py intents ../shared/data/banking77/test-8opt.jsonl --skip 400 --rows 48 > $(BURST_ROWS)
	THREADS=$(THREADS) SIGTERM_TIMEOUT=$(if $(filter default,$(BURST_MODEL)),5m,2m) ./scripts/serve-burst.sh "$$(./scripts/fetch-model.sh $(filter small,$(BURST_MODEL)))" $(BURST_ROWS) $(BURST_OUT) 20s

test: native server model model-small sdk
	@python3 -c 'import jinja2' 2>/dev/null || python3 -m pip install --quiet 'jinja2==3.1.6'
	@python3 -c 'import numpy' 2>/dev/null || python3 -m pip install --quiet 'numpy==2.4.6'
	@[ -d ../shared/data ] || [ -n "$$GOJEV_SHARED_DATA" ] || echo "note: no ../shared/data beside this clone: the tests that need it skip (go test -v says which); CI=true makes them fail instead"
	JEV_SMALL_MODEL="$$(./scripts/fetch-model.sh small)" GOJEV_MODEL="$$(./scripts/fetch-model.sh)" JEV_SDK_PYTHON="$$(./scripts/sdk-venv.sh)" $(GO) test $(TAGS) -count=1 -timeout 80m -skip '^TestServeAlone' ./...
	@# jev serve timed under load, and the clients people install with their own timeouts: alone on the CPU.
	JEV_SMALL_MODEL="$$(./scripts/fetch-model.sh small)" JEV_SDK_PYTHON="$$(./scripts/sdk-venv.sh)" $(GO) test $(TAGS) -count=1 -timeout 20m -run '^TestServeAlone' -v ./cmd/jev

soak: native model-small
	JEV_SOAK_DECISIONS=$${JEV_SOAK_DECISIONS:-10000} JEV_SMALL_MODEL="$$(./scripts/fetch-model.sh small)" $(GO) test $(TAGS) -count=1 -timeout 40m -run '^TestSoak$$' -v .

transfer: build model
	GOJEV_MODEL="$$(./scripts/fetch-model.sh)" ./scripts/transfer.sh

CAL_OUT ?= out/cal
CAL_HELD ?= 800
CAL_HELD_CYCLIC ?= 400
calibration: build model
	@mkdir -p $(CAL_OUT)
	tail -n +201 $(B77)/test-8opt.jsonl | head -n $(CAL_HELD) > $(CAL_OUT)/held-rows.jsonl
	head -n $(CAL_HELD_CYCLIC) $(CAL_OUT)/held-rows.jsonl > $(CAL_OUT)/held-rows-cyclic.jsonl
	set -e; m="$$(./scripts/fetch-model.sh)"; d() { $(JEV) decide -m "$$m" -t $(THREADS) -q --resume "$$@"; }; \
	d --debias pride --prior $(CAL_OUT)/prior.json -i $(B77)/sample-200-8opt.jsonl -o $(CAL_OUT)/fit-pride.jsonl; \
	d --debias pride --prior $(CAL_OUT)/prior.json -i $(CAL_OUT)/held-rows.jsonl -o $(CAL_OUT)/held-pride.jsonl; \
	d --permute cyclic -i $(B77)/sample-200-8opt.jsonl -o $(CAL_OUT)/fit-cyclic.jsonl; \
	d --permute cyclic -i $(CAL_OUT)/held-rows-cyclic.jsonl -o $(CAL_OUT)/held-cyclic.jsonl
	$(JEV) calibrate $(CAL_OUT)/fit-pride.jsonl $(CAL_OUT)/fit-cyclic.jsonl -o $(CAL_OUT)/profile.json \
		--eval $(CAL_OUT)/held-pride.jsonl --eval $(CAL_OUT)/held-cyclic.jsonl --json $(CAL_OUT)/calibration.json
	$(JEV) calibrate $(CAL_OUT)/fit-pride.jsonl $(CAL_OUT)/fit-cyclic.jsonl --eval $(CAL_OUT)/held-pride.jsonl --eval $(CAL_OUT)/held-cyclic.jsonl

KO_ROWS ?= 300
KO_SUB ?= 100
KO_OUT ?= out/ko
B77 := ../shared/data/banking77
knockout: build model
	@mkdir -p $(KO_OUT)
	python3 scripts/banking77-rows.py $(B77)/test.csv $(B77)/categories.json --rows $(KO_ROWS) > $(KO_OUT)/b77-77.jsonl
	python3 scripts/cut-options.py 16 < $(KO_OUT)/b77-77.jsonl > $(KO_OUT)/b77-16.jsonl
	python3 scripts/cut-options.py 8 < $(KO_OUT)/b77-77.jsonl > $(KO_OUT)/b77-8.jsonl
	head -n $(KO_SUB) $(KO_OUT)/b77-77.jsonl > $(KO_OUT)/b77-77-sub.jsonl
	python3 scripts/banking77-rows.py $(B77)/train.csv $(B77)/categories.json --rows 80 > $(KO_OUT)/b77-train80.jsonl
	set -e; d="$$(./scripts/fetch-tasks.sh)"; python3 scripts/task-rows.py socmany "$$d" --rows 80 > $(KO_OUT)/socmany.jsonl; \
	python3 scripts/task-rows.py socmany "$$d" --rows 40 --skip 80 > $(KO_OUT)/socmany-more.jsonl
	set -e; m="$$(./scripts/fetch-model.sh)"; d() { $(JEV) decide -m "$$m" -t $(THREADS) -q --resume "$$@"; }; \
	d --debias none -i $(KO_OUT)/b77-8.jsonl -o $(KO_OUT)/cut8.jsonl; \
	d --debias none -i $(KO_OUT)/b77-16.jsonl -o $(KO_OUT)/cut16.jsonl; \
	d --debias none --many knockout -i $(KO_OUT)/b77-77.jsonl -o $(KO_OUT)/knockout.jsonl; \
	d --debias pride --many knockout --prior $(KO_OUT)/prior.json -i $(KO_OUT)/b77-77-sub.jsonl -o $(KO_OUT)/knockout-pride-sub.jsonl; \
	d --debias none --many knockout --knockout-grouping length -i $(KO_OUT)/b77-77-sub.jsonl -o $(KO_OUT)/knockout-length-sub.jsonl; \
	d --contract binary -i $(KO_OUT)/b77-77-sub.jsonl -o $(KO_OUT)/binary-sub.jsonl; \
	d -i $(KO_OUT)/b77-77.jsonl -o $(KO_OUT)/shortlist.jsonl; \
	d -i $(KO_OUT)/b77-train80.jsonl -o $(KO_OUT)/shortlist-train80.jsonl; \
	d -i $(KO_OUT)/socmany.jsonl -o $(KO_OUT)/socmany-shortlist.jsonl; \
	d -i $(KO_OUT)/socmany-more.jsonl -o $(KO_OUT)/socmany-more-shortlist.jsonl; \
	d --contract binary -i $(KO_OUT)/socmany.jsonl -o $(KO_OUT)/socmany-binary.jsonl
	python3 measurements/shortlist.py $(KO_OUT)/shortlist.jsonl
	python3 measurements/shortlist.py $(KO_OUT)/socmany-shortlist.jsonl --binary $(KO_OUT)/socmany-binary.jsonl
	python3 measurements/shortlist.py $(KO_OUT)/shortlist-train80.jsonl --ship --held-out "Banking77 test=$(KO_OUT)/shortlist.jsonl" \
		--held-out "SOC occupations=$(KO_OUT)/socmany-shortlist.jsonl,$(KO_OUT)/socmany-more-shortlist.jsonl"
	$(JEV) report $(KO_OUT)/knockout.jsonl=knockout $(KO_OUT)/cut16.jsonl=cut16 $(KO_OUT)/cut8.jsonl=cut8 --json $(KO_OUT)/report.json
	$(JEV) report $(KO_OUT)/knockout.jsonl=knockout $(KO_OUT)/knockout-pride-sub.jsonl=knockout-pride $(KO_OUT)/knockout-length-sub.jsonl=knockout-length $(KO_OUT)/binary-sub.jsonl=binary $(KO_OUT)/shortlist.jsonl=shortlist

POOL_OUT ?= out/tasks
POOL_ROWS ?= 150
POOL_TASKS ?= siqa mmlu rt news soc bias
POOL_PROFILE ?= calibrate/shipped/qwen2.5-coder-1.5b-instruct-q4_k_m.direct-options-v1.json
calibration-pool: build model
	@mkdir -p $(POOL_OUT) out/cal
	set -e; d="$$(./scripts/fetch-tasks.sh)"; for t in $(POOL_TASKS); do python3 scripts/task-rows.py $$t "$$d" --rows $(POOL_ROWS) > $(POOL_OUT)/$$t.jsonl; done
	set -e; m="$$(./scripts/fetch-model.sh)"; for t in $(POOL_TASKS); do \
	  $(JEV) decide -m "$$m" -t $(THREADS) -q --resume --debias pride --pride-sample 0.1 --prior $(POOL_OUT)/prior-$$t.json -i $(POOL_OUT)/$$t.jsonl -o $(POOL_OUT)/$$t-pride.jsonl; done
	[ -f out/cal/fit-pride.jsonl ] || { gunzip -c measurements/cal/fit-pride.jsonl.gz > out/cal/fit-pride.jsonl; cp measurements/cal/fit-pride.jsonl.run.json out/cal/; }
	set -e; m="$$(./scripts/fetch-model.sh)"; \
	python3 measurements/calibration-pool.py $(foreach t,$(POOL_TASKS),$(POOL_OUT)/$(t)-pride.jsonl=$(t)) out/cal/fit-pride.jsonl=banking77 \
	  --profile $(POOL_PROFILE) --model-file "$$(basename "$$m")" --model-name "Qwen2.5 Coder 1.5B Instruct GGUF" \
	  --model-sha256 "$$(awk '$$1=="model" && $$2=="default" {print $$4}' scripts/models.tsv)" \
	  --template-sha256 "$$($(JEV) check -m "$$m" | awk '$$1=="template_sha256" {print $$2}')"

NOUL_OUT ?= out/noul
NOUL_FIT ?= sarcasm malicious faithful answerable deduction
NOUL_HELD ?= causal pubmedqa
noul-pool: build model
	@mkdir -p $(NOUL_OUT)
	set -e; d="$$(./scripts/fetch-tasks.sh)"; for t in $(NOUL_FIT) $(NOUL_HELD); do python3 scripts/task-rows.py $$t "$$d" --rows 150 > $(NOUL_OUT)/$$t.jsonl; done
	python3 scripts/typed-rows.py noul $(B77)/test-8opt.jsonl --skip 200 --rows 200 > $(NOUL_OUT)/banking77.jsonl
	set -e; m="$$(./scripts/fetch-model.sh)"; for t in $(NOUL_FIT) $(NOUL_HELD) banking77; do \
	  $(JEV) decide -m "$$m" -t $(THREADS) -q --resume --debias none -i $(NOUL_OUT)/$$t.jsonl -o $(NOUL_OUT)/$$t-out.jsonl; done
	python3 measurements/noul-pool.py $(foreach t,$(NOUL_FIT),$(NOUL_OUT)/$(t)-out.jsonl=$(t)) $(foreach t,$(NOUL_HELD) banking77,$(NOUL_OUT)/$(t)-out.jsonl=$(t):held)

typed: build model
	THREADS=$(THREADS) ./scripts/typed-measure.sh

FUZZTIME ?= 2m
fuzz: native model-small
	JEV_SMALL_MODEL="$$(./scripts/fetch-model.sh small)" ./scripts/fuzz.sh $(FUZZTIME)

vet: native
	$(GO) vet $(TAGS) ./...

clean:
	rm -rf bin out third_party/native
