package proxy_test

import (
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// TestListenSessionCapUnderBurst opens 100 sessions at once: exactly 64 get
// a session and a server, the rest 503, and no server is started for them.
// (The cap used to be checked before the server started and the session
// counted after, so a burst got past it: 100 at once opened 68.)
func TestListenSessionCapUnderBurst(t *testing.T) {
	const burst = 100
	pids := t.TempDir()
	cmd, env := fake("answer", "HOIST_FAKE_PIDDIR="+pids)
	l := startListenWith(t, env, append([]string{"--"}, cmd...)...)

	statuses := make([]int, burst)
	errs := make([]error, burst)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req, _ := http.NewRequest("POST", l.url, strings.NewReader(strings.TrimSpace(init16(1))))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		}()
	}
	close(start)
	wg.Wait()
	count := map[int]int{}
	for i, s := range statuses {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		count[s]++
	}
	if count[200] != 64 || count[503] != burst-64 || len(count) != 2 {
		t.Errorf("statuses %v, want 64 × 200 and %d × 503", count, burst-64)
	}
	started, _ := os.ReadDir(pids)
	if len(started) > 64 {
		t.Errorf("%d servers started, want at most 64", len(started))
	}
	l.cmd.Process.Signal(syscall.SIGTERM)
	if code := l.wait(); code != 0 {
		t.Errorf("exit %d after SIGTERM; stderr:\n%s", code, l.stderr)
	}
}
