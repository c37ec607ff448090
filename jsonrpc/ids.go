package jsonrpc

import (
	"sync"

	"github.com/hoist-mcp/hoist/jsontext"
)

// IDs keeps the request ids in flight on one server's stream from its two
// senders, the host and a proxy that makes requests of its own, so that no
// id is in flight for both at once (issue 23, point 3): an answer then
// belongs to whoever has its id in flight, whatever the id looks like. The
// proxy takes an id only when no host request of it is in flight (Own);
// the host's request of an id the proxy has in flight waits until the
// proxy's is answered (Host). Ids are compared as a server reads them: a
// string by its decoded text ("hoist\u002d1" is "hoist-1"), anything else
// by its bytes.
//
// Its methods are safe for concurrent use: the host's reader, the server's
// reader and the proxy's owner call them.
type IDs struct {
	mu   sync.Mutex
	host map[string]int           // host requests forwarded, not answered, by key
	own  map[string]chan struct{} // the proxy's, closed when answered
}

// NewIDs returns an empty book.
func NewIDs() *IDs {
	return &IDs{host: map[string]int{}, own: map[string]chan struct{}{}}
}

// IDKey is the key an id is compared by: a JSON string's decoded text
// (quoted), else the id's bytes.
func IDKey(id []byte) string {
	if jsontext.Kind(id) == '"' && jsontext.Valid(id) {
		return `"` + jsontext.Unquote(id)
	}
	return string(id)
}

// Host notes a host request of id about to be forwarded. While the proxy
// has a request of the same id in flight it waits for that one's answer,
// or until done is closed (then it reports false, and notes nothing).
func (b *IDs) Host(id []byte, done <-chan struct{}) bool {
	k := IDKey(id)
	for {
		b.mu.Lock()
		wait, busy := b.own[k]
		if !busy {
			b.host[k]++
			b.mu.Unlock()
			return true
		}
		b.mu.Unlock()
		select {
		case <-wait:
		case <-done:
			return false
		}
	}
}

// Own takes id for a request of the proxy's and reports whether it could:
// not while a host request of that id, or another of the proxy's, is in
// flight.
func (b *IDs) Own(id []byte) bool {
	k := IDKey(id)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.host[k] > 0 || b.own[k] != nil {
		return false
	}
	b.own[k] = make(chan struct{})
	return true
}

// Free reports whether the proxy could take id now (Own), without taking
// it.
func (b *IDs) Free(id []byte) bool {
	k := IDKey(id)
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.host[k] == 0 && b.own[k] == nil
}

// Answered notes the server's answer to id and reports whether it was to a
// request of the proxy's.
func (b *IDs) Answered(id []byte) (own bool) {
	k := IDKey(id)
	b.mu.Lock()
	defer b.mu.Unlock()
	if ch, ok := b.own[k]; ok {
		delete(b.own, k)
		close(ch)
		return true
	}
	if n := b.host[k]; n > 1 {
		b.host[k] = n - 1
	} else {
		delete(b.host, k)
	}
	return false
}
