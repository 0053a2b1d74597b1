# One command per job. `make test` runs every test, starting the Firestore and
# Pub/Sub emulators itself (once for the whole run); `make run` starts the
# local stack.

GO       ?= go
GOTEST   ?= $(GO) test -race -count=1 -timeout 30m
# The emulators are started fresh on free ports for a test run, whatever the
# shell has set, so a test run never writes into a developer's running stack.
WITH_EMULATORS = env -u FIRESTORE_EMULATOR_HOST -u PUBSUB_EMULATOR_HOST \
	$(GO) run ./dev/with-emulators --

.PHONY: deps test image-test image-bench run bench bench-scale lint package tf-check sim sim-accounts cli fuzz docs screenshots

## deps: install what the other targets need and is missing (scripts/install-deps.sh;
## test, run, image-test and bench run it first: a no-op, a fraction of a second, when all is there)
deps:
	@scripts/install-deps.sh

## test: every test, with -race (the simulation's and the deploy checks' without), against the real emulators
# The simulation (internal/sim) plays one invocation at a time on a seeded
# schedule, and -race made it half of the run (7 of 15 minutes on two
# cores) for nothing it could find: its tests run without -race, after the
# rest. The race detector still runs every package the simulation drives
# (reconcile, gc, pools, the providers) in their own tests. The deploy
# package's tests read the code (the call walk over its SSA form, the
# imports) and render the Terraform's templates; no product code runs
# there, and under -race the walk took 49 s instead of 10.
NORACE_PKGS = ./internal/sim ./deploy
test: deps
	$(WITH_EMULATORS) $(GOTEST) $$($(GO) list ./... | grep -v -x -F "$$($(GO) list $(NORACE_PKGS))")
	$(GO) test -count=1 -timeout 30m $(NORACE_PKGS)

## screenshots: the web console's pictures in docs/images/console, as its
## browser test takes them (the end-to-end test, with EGRESS_SCREENSHOTS=1)
screenshots: deps
	EGRESS_SCREENSHOTS=1 $(WITH_EMULATORS) $(GO) test -count=1 -timeout 30m -run '^TestEndToEnd$$' ./dev/localstack

## image-test: the startup script on a really booted Debian 13 and Debian 12
## (systemd-nspawn, as root), each from an image shaped like Google's, and the
## cloud-init user-data on a Debian 13 shaped like Hetzner's, one like EC2's,
## one like a DigitalOcean Droplet and one like an Azure VM, checked from
## outside; builds the root file systems once (minutes) and caches them in
## $${XDG_CACHE_HOME:-~/.cache}/egress
# A target of its own, and not part of `make test`: it needs root and boots a
# whole system twice, so under `make test` the test skips itself (it runs
# only with EGRESS_IMAGE_TEST=1, which this target sets) and one CI run boots
# it once. -v shows each check as it passes, and the summary line.
# TestFreshMachine runs scripts/install-deps.sh in a copy of the Debian 13
# root: it completes, or stops with the one line naming the emulators'
# packages and the command that adds Google's source.
image-test: deps
	EGRESS_IMAGE_TEST=1 $(GO) test -race -count=1 -v -timeout 45m -run '^(TestImage|TestFreshMachine)$$' ./internal/vm/imagetest

## image-bench: the proxy's data path on the image test's topology against the
## direct path (one line, and JSON to $$IMAGE_BENCH_OUT); IMAGE_BENCH_ENGINE=tinyproxy
## measures the host's tinyproxy on the same harness
# Without -race: the clients and servers share the machine with the proxy,
# and the race detector would slow the direct path more than the proxied one.
image-bench: deps
	EGRESS_IMAGE_TEST=1 EGRESS_IMAGE_BENCH=1 $(GO) test -count=1 -v -timeout 30m -run '^TestImageBench$$' ./internal/vm/imagetest

## run: the local stack (emulators, event stand-ins, all three functions, mock provider)
# Built, then exec'd, so that Ctrl-C reaches the stack itself, which stops
# the emulators before it exits. The build says it starts: the first one,
# with an empty Go build cache, printed nothing for minutes.
run: deps
	@echo "make run: building the local stack (the first build compiles every dependency: minutes)"
	@$(GO) build -o "$${TMPDIR:-/tmp}/egress-localstack" ./dev/localstack
	@exec "$${TMPDIR:-/tmp}/egress-localstack"

## bench: what a proxy costs and how fast the system converges, on the local
## stack (a table, and JSON to $$BENCH_OUT, default bench-results.json; at
## most six minutes, each phase's time printed). It starts its own emulators,
## like make test.
bench: deps
	$(GO) run ./dev/bench

## bench-scale: the scaling table alone: the bulk phase at 100 and 1,000
## proxies and the collector at 1,000, 10,000 and 100,000 instances, an
## item's time and memory at each size (make bench prints it too)
bench-scale: deps
	$(GO) run ./dev/bench -phases bulk,gc

## sim: the fault simulation over $(SEEDS) seeds, and the planted bugs it
## must catch; it ends with "sim: N seeds, M faults, P pool and claim events, V violations" (make test
## runs 300 seeds, and looks for each planted bug from the seed sim.PlantedAt records)
SEEDS ?= 10000
sim:
	@$(GO) run ./dev/sim -seeds $(SEEDS)

## sim-accounts: the accounts schedule at scale, $(PROXIES) proxies across
## $(ACCOUNTS) accounts under rate-limit and quota faults (minutes; not in
## make test, which plays 400 across ten); it ends with "sim: N proxies,
## M accounts, ... V violations"
PROXIES ?= 100000
ACCOUNTS ?= 10
sim-accounts:
	@$(GO) run ./dev/sim -accounts $(ACCOUNTS) -proxies $(PROXIES)

## fuzz: each fuzz test (every func FuzzXxx in a _test.go) for $(FUZZTIME)
## each, one after another (go test fuzzes one target per run); what they
## find lands in the package's testdata/fuzz/FuzzXxx, which make test runs
FUZZTIME ?= 1m
fuzz:
	@set -e; git grep -o '^func Fuzz[A-Za-z0-9_]*' -- '*_test.go' | while IFS=: read -r file fn; do \
		fn=$${fn#func }; pkg=./$$(dirname "$$file"); \
		echo "fuzz: $$fn in $$pkg for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) "$$pkg"; \
	done

## docs: write the pages of docs/ the code knows (configuration, API, CLI,
## phases, pools' runs) from the code; make test fails while one is stale
docs:
	$(GO) run ./dev/gendocs

## cli: the egress CLI, as bin/egress (or: go install ./cmd/egress)
cli:
	$(GO) build -o bin/egress ./cmd/egress

## package: what deploy/terraform uploads: the functions' source archive and
## the proxy engine binary the VMs install (static, linux/amd64)
package:
	$(GO) run ./deploy/package-functions -o dist/functions-source.zip
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -o dist/egress-proxy ./cmd/egress-proxy

## tf-check: `tofu fmt -check` on deploy/terraform (builds OpenTofu once; not part of make test: minutes)
tf-check:
	scripts/tf-check.sh

## lint: formatting, vet, and go.mod and go.sum tidy
# -e: tink-go-gcpkms v2.4.0 (the newest) has a test importing a package
# that google.golang.org/genproto no longer holds, at the version Firestore
# and Pub/Sub need, so plain `go mod tidy` stops on a dependency's test
# that no build of ours compiles; with -e it tidies everything else.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@$(GO) mod tidy -e -diff 2>/dev/null || { echo "go.mod and go.sum are not tidy (the diff above): run go mod tidy -e"; exit 1; }
