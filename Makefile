# A thin layer over the go command; everything also works as plain go.

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/hoist-mcp/hoist/internal/buildinfo.version=$(VERSION)
STATICCHECK_VERSION := v0.8.2

.PHONY: all build demo try test peers lint bench clean

all: build

build:
	go build -ldflags '$(LDFLAGS)' -o bin/ ./cmd/...

# The main job on embedded defaults: record scripted sessions against the
# retail world, ingest, learn a flow, show it, serve it.
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
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	go vet ./...
	go run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...
	go mod tidy -diff

bench: build
	scripts/bench.sh

clean:
	rm -rf bin
