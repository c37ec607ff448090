package jsonrpc

import "testing"

func TestIDs(t *testing.T) {
	b := NewIDs()
	done := make(chan struct{})
	if !b.Host([]byte(`"hoist-1"`), done) {
		t.Fatal("Host refused a free id")
	}
	if b.Own([]byte(`"hoist\u002d1"`)) || b.Free([]byte(`"hoist-1"`)) {
		t.Error("the proxy took an id a host request has in flight (escaped alike)")
	}
	if !b.Own([]byte(`"hoist-2"`)) || b.Own([]byte(`"hoist-2"`)) {
		t.Error("Own: a free id not taken, or one taken twice")
	}
	if !b.Own([]byte(`1`)) || !b.Own([]byte(`"1"`)) {
		t.Error("1 and \"1\" are different ids")
	}
	if b.Answered([]byte(`"hoist-1"`)) {
		t.Error("the host's answer taken for the proxy's")
	}
	// The host's request of a pending proxy id waits for its answer.
	got := make(chan bool)
	go func() { got <- b.Host([]byte(`"hoist-2"`), done) }()
	if !b.Answered([]byte(`"hoist-2"`)) {
		t.Error("the proxy's answer not known as its own")
	}
	if !<-got {
		t.Error("Host gave up though the proxy's request was answered")
	}
	if b.Free([]byte(`"hoist-2"`)) {
		t.Error("the host's request of hoist-2 is in flight now")
	}
	// Or gives up when the session ends.
	b.Own([]byte(`"hoist-3"`))
	close(done)
	if b.Host([]byte(`"hoist-3"`), done) {
		t.Error("Host noted an id the proxy holds after the session ended")
	}
}
