package console

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// DefaultPoll is how often the console looks at the directory for new and
// grown logs. Proxies write their logs from a goroutine of their own and
// tell no one, so the console polls, from the server's side: the page only
// waits on events.
const DefaultPoll = 250 * time.Millisecond

// hub fans each change out to the pages listening (server-sent events).
// Each listener has a buffered channel; a listener too slow to take an
// event misses it and gets "reload" instead, which tells the page to read
// everything again, so nothing is lost and no sender waits.
//
// gen counts the changes published: a page carries the count it was drawn
// at, and a stream opens by telling its own, so a page learns of a change
// that fell between its drawing and its stream.
type hub struct {
	mu   sync.Mutex
	subs map[chan string]bool
	gen  uint64
}

func newHub() *hub { return &hub{subs: map[chan string]bool{}} }

func (h *hub) subscribe() chan string {
	c := make(chan string, 64)
	h.mu.Lock()
	h.subs[c] = true
	h.mu.Unlock()
	return c
}

func (h *hub) unsubscribe(c chan string) {
	h.mu.Lock()
	delete(h.subs, c)
	h.mu.Unlock()
}

func (h *hub) generation() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.gen
}

func (h *hub) publish(ids []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gen++
	for c := range h.subs {
		for _, id := range ids {
			select {
			case c <- id:
			default:
				select {
				case c <- "":
				default:
				}
			}
		}
	}
}

// poll refreshes the source every interval until ctx ends, and publishes
// what changed.
func (s *Server) poll(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			ids, err := s.src.Refresh(ctx)
			if err != nil {
				continue
			}
			if len(ids) > 0 {
				s.forget(ids)
				s.hub.publish(ids)
			}
		}
	}
}

// events streams changes to a page: one "session" event per session that
// appeared or grew, its id as the data ("" when the page should read
// everything again).
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	c := s.hub.subscribe()
	defer s.hub.unsubscribe(c)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	// Subscribed first, then counted: a change after this is an event, one
	// before it is in the count.
	fmt.Fprintf(w, ": hoist console\n\nevent: gen\ndata: %d\n\n", s.hub.generation())
	fl.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case id := <-c:
			// An id is one line of the stream: a line end in it would end
			// the event early.
			fmt.Fprintf(w, "event: session\ndata: %s\n\n", strings.NewReplacer("\r", "", "\n", "").Replace(id))
			fl.Flush()
		}
	}
}
