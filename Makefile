# One command per job. `make test` runs every test, starting the Firestore and
# Pub/Sub emulators itself (once for the whole run); `make run` starts the
# local stack.

GO       ?= go
GOTEST   ?= $(GO) test -race -count=1 -timeout 30m
# The emulators are started fresh on free ports for a test run, whatever the
# shell has set, so a test run never writes into a developer's running stack.
WITH_EMULATORS = env -u FIRESTORE_EMULATOR_HOST -u PUBSUB_EMULATOR_HOST \
	$(GO) run ./emulators/cmd/with-emulators --

.PHONY: deps test image-test run bench lint package tf-check sim cli fuzz

## deps: install what the other targets need and is missing (scripts/install-deps.sh;
## test, run, image-test and bench run it first: a no-op, a fraction of a second, when all is there)
deps:
	@scripts/install-deps.sh

## test: every test, with -race, against the real emulators
test: deps
	$(WITH_EMULATORS) $(GOTEST) ./...

## image-test: the startup script on a really booted Debian 12 (systemd-nspawn,
## as root), checked from outside; builds the root file system once (about a
## minute) and caches it in $${XDG_CACHE_HOME:-~/.cache}/egress
# A target of its own, and not part of `make test`: it needs root and boots a
# whole system twice, so under `make test` the test skips itself (it runs
# only with EGRESS_IMAGE_TEST=1, which this target sets) and one CI run boots
# it once. -v shows each check as it passes, and the summary line.
image-test: deps
	EGRESS_IMAGE_TEST=1 $(GO) test -race -count=1 -v -timeout 20m -run '^TestImage$$' ./internal/bootstrap/imagetest

## run: the local stack (emulators, event stand-ins, all three functions, mock provider)
# Built, then exec'd, so that Ctrl-C reaches the stack itself, which stops
# the emulators before it exits.
run: deps
	@$(GO) build -o "$${TMPDIR:-/tmp}/egress-localstack" ./emulators/cmd/localstack
	@exec "$${TMPDIR:-/tmp}/egress-localstack"

## bench: what a proxy costs and how fast the system converges, on the local
## stack (a table, and JSON to $$BENCH_OUT, default bench-results.json; about
## two minutes). It starts its own emulators, like make test.
bench: deps
	$(GO) run ./emulators/cmd/bench

## sim: the fault simulation over $(SEEDS) seeds, and the planted bugs it
## must catch; it ends with "sim: N seeds, M faults, V violations" (make test
## runs 300 seeds)
SEEDS ?= 10000
sim:
	@$(GO) run ./internal/cmd/sim -seeds $(SEEDS)

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

## cli: the egress CLI, as bin/egress (or: go install ./internal/cmd/egress)
cli:
	$(GO) build -o bin/egress ./internal/cmd/egress

## package: the functions' source archive that deploy/terraform uploads
package:
	$(GO) run ./scripts/package-functions -o dist/functions-source.zip

## tf-check: `tofu fmt -check` on deploy/terraform (builds OpenTofu once; not part of make test: minutes)
tf-check:
	scripts/tf-check.sh

## lint: formatting and vet
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
