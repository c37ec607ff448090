# A thin layer over the go command; everything also works as plain go.

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/hoist-mcp/hoist/internal/buildinfo.version=$(VERSION)
STATICCHECK_VERSION := v0.8.2

.PHONY: all build beam demo try test peers lint bench bench-chart bench-relay bench-replay clean

all: build

build:
	go build -ldflags '$(LDFLAGS)' -o bin/ ./cmd/...

# The Apache Beam pipelines (beam/, its own module): bin/hoist-beam.
beam:
	cd beam && go build -o ../bin/ ./cmd/hoist-beam

# The main job on embedded defaults: record scripted sessions against the
# retail world, ingest, learn a flow, show it, serve it; then replay a
# recorded τ²-bench agent live through a flow.
demo: build
	scripts/demo.sh

# Five messages from a shell through the proxy, and the session log.
try: build
	scripts/try-it.sh

# Every test, the real npm peers included.
test:
	scripts/test.sh

peers:
	scripts/peers.sh

lint:
	scripts/check-tree.sh
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	go vet ./...
	go run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...
	go mod tidy -diff
	cd beam && go vet ./...
	cd beam && go run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...
	cd beam && go mod tidy -diff

bench: build
	scripts/bench.sh

# Some parts of make bench, redrawn into the same page: PARTS="relay sessions".
bench-chart: build
	scripts/bench.sh chart $(PARTS)

# The recording proxy at the relay floor: hoist-mcp --record against a cat
# relay and --listen against supergateway, in front of server-everything.
# AGAINST=BINARY measures against another hoist-mcp build instead.
bench-relay: build
	scripts/bench.sh relay

# A flow measured live: τ²-bench's retail logs (../shared/data/tau2) replayed
# through hoist-mcp --flow against τ²-bench's retail world, beside hoist
# audit's offline figures and a replay with no proxy. REPLAY_FLAGS adds
# flags, such as -time-scale 1 for the recorded think times.
bench-replay: build
	go run ./internal/benchcmd/replaybench $(REPLAY_FLAGS)

clean:
	rm -rf bin
