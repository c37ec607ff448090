package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/hoist-mcp/hoist/internal/testbin"
)

// truth is what a scripted agent knows of its own run through a served
// flow: the LLM turns it skipped and the calls lookups answered.
type truth struct {
	LLMTurns        int `json:"llm_turns"`
	LLMTurnsSkipped int `json:"llm_turns_skipped"`
	Calls           int `json:"calls"`
	CallsSkipped    int `json:"calls_skipped"`
}

// bounds are a report's estimate with its lower and upper bound.
type bounds struct {
	Lo  float64 `json:"lo"`
	Est float64 `json:"estimate"`
	Hi  float64 `json:"hi"`
}

func (b bounds) holds(x float64) bool { return b.Lo-1e-9 <= x && x <= b.Hi+1e-9 }

// auditJSON is the part of hoist audit --json the ground truth checks.
type auditJSON struct {
	Episodes int `json:"episodes"`
	Served   int `json:"served"`
	Total    struct {
		Lookups     int    `json:"lookups"`
		HitBounds   bounds `json:"hits_bounds"`
		SavedBounds bounds `json:"saved_turns_bounds"`
	} `json:"total"`
}

// session is one recorded run: how it was served, where, and its truth.
type session struct {
	name, how, dir string
	truth          truth
}

// record runs a procedure for a customer through hoist-mcp with proxyArgs,
// recording into a directory of its own, and returns the run's report.
func record(t *testing.T, file, email string, proxyArgs ...string) (truth, string) {
	t.Helper()
	dir := t.TempDir()
	args := []string{"--json", "--param", "email=" + email, filepath.Join(testbin.Root(), "testdata", "procedures", "retail", file),
		"--", testbin.Build(t, "hoist-mcp"), "--record", dir, "--domain", "retail"}
	args = append(args, proxyArgs...)
	args = append(args, "--", testbin.Build(t, "hoist-mcp-demo"), "--world", "retail")
	cmd := exec.Command(testbin.Build(t, "hoist-procedure"), args...)
	cmd.Env = testbin.Env()
	out, err := cmd.Output()
	if err != nil {
		t.Errorf("hoist-procedure %s for %s: %v", file, email, err)
		return truth{}, dir
	}
	var r truth
	if err := json.Unmarshal(out, &r); err != nil {
		t.Errorf("hoist-procedure's report: %v\n%s", err, out)
	}
	return r, dir
}

// TestGroundTruth holds hoist audit and evaluate to what a scripted agent knows it
// skipped (issue 24, item 2). Customers of every procedure in
// testdata/procedures are recorded, a flow learned from them, and new
// customers served it through the built hoist-mcp: served, served with
// exploration, and in shadow. A served run's own report (hoist-procedure
// --json) says which turns it skipped and how many of its calls lookups
// answered: for every served session the truth lies within audit's bounds,
// and summed over the sessions the estimate is within 15% of the truth. A
// shadow session skipped nothing; its truth is its served twin's (the same
// customer, procedure and shop), which audit's walk must find exactly.
func TestGroundTruth(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testbin.Root(), "testdata", "procedures", "retail", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("procedures: %v %v", files, err)
	}
	train := t.TempDir()
	var wg sync.WaitGroup
	n := 0
	for _, file := range files {
		for range 4 {
			n++
			wg.Add(1)
			go func(n int) {
				defer wg.Done()
				procedure(t, filepath.Base(file), fmt.Sprintf("c%d@example.com", n), "--record", train, "--domain", "retail")
			}(n)
		}
	}
	wg.Wait()
	flowFile := filepath.Join(t.TempDir(), "retail.flow.json")
	hoist(t, "learn", "-q", "--sessions", train, "--domain", "retail", "--folds", "1", "--out", flowFile)

	var (
		mu       sync.Mutex
		sessions []session
	)
	add := func(s session) {
		mu.Lock()
		defer mu.Unlock()
		sessions = append(sessions, s)
	}
	twins := map[string]truth{} // a served run's truth, by procedure and customer
	for i, file := range files {
		base := filepath.Base(file)
		for k := range 2 {
			c := 13 + 2*i + k // the shop has c1 to c20; these learned nothing
			email := fmt.Sprintf("c%d@example.com", c)
			wg.Add(3)
			go func() {
				defer wg.Done()
				tr, dir := record(t, base, email, "--flow", flowFile)
				mu.Lock()
				twins[base+email] = tr
				mu.Unlock()
				add(session{base + " " + email, "served", dir, tr})
			}()
			go func() {
				defer wg.Done()
				e := fmt.Sprintf("c%d@example.com", c-12)
				tr, dir := record(t, base, e, "--flow", flowFile, "--flow-explore", "0.5", "--flow-explore-seed", fmt.Sprint(c))
				add(session{base + " " + e, "explored", dir, tr})
			}()
			go func() {
				defer wg.Done()
				_, dir := record(t, base, email, "--flow", flowFile, "--flow-shadow")
				add(session{base + " " + email, "shadow", dir, truth{}})
			}()
		}
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	var sumTurns, sumHits, estTurns, estHits float64
	for _, s := range sessions {
		tr := s.truth
		if s.how == "shadow" {
			tr = twins[strings.SplitN(s.name, " ", 2)[0]+strings.SplitN(s.name, " ", 2)[1]]
		}
		var a auditJSON
		out := hoist(t, "audit", "--flow", flowFile, "--sessions", s.dir, "--json", "-q")
		if err := json.Unmarshal([]byte(out), &a); err != nil || a.Episodes != 1 {
			t.Fatalf("%s %s: audit --json: %v, %d sessions\n%s", s.how, s.name, err, a.Episodes, out)
		}
		hits, saved := a.Total.HitBounds, a.Total.SavedBounds
		t.Logf("%-8s %-40s truth: %d turns skipped, %d calls answered; audit: turns %.2f (%.2f–%.2f), hits %.2f (%.2f–%.2f) of %d lookups",
			s.how, s.name, tr.LLMTurnsSkipped, tr.CallsSkipped, saved.Est, saved.Lo, saved.Hi, hits.Est, hits.Lo, hits.Hi, a.Total.Lookups)
		wantServed := 0
		if s.how != "shadow" && a.Total.Lookups > 0 {
			wantServed = 1
		}
		if a.Served != wantServed {
			t.Errorf("%s %s: audit counts %d served sessions, want %d", s.how, s.name, a.Served, wantServed)
		}
		if !saved.holds(float64(tr.LLMTurnsSkipped)) || !hits.holds(float64(tr.CallsSkipped)) {
			t.Errorf("%s %s: the truth (%d turns skipped, %d calls answered) is outside audit's bounds (turns %.2f–%.2f, hits %.2f–%.2f)",
				s.how, s.name, tr.LLMTurnsSkipped, tr.CallsSkipped, saved.Lo, saved.Hi, hits.Lo, hits.Hi)
		}
		if s.how == "shadow" && (saved.Est != float64(tr.LLMTurnsSkipped) || hits.Est != float64(tr.CallsSkipped)) {
			t.Errorf("%s %s: audit's walk finds %.0f turns saved and %.0f hits; its served twin skipped %d turns, %d calls",
				s.how, s.name, saved.Est, hits.Est, tr.LLMTurnsSkipped, tr.CallsSkipped)
		}
		// The text report says the same.
		text := hoist(t, "audit", "--flow", flowFile, "--sessions", s.dir, "-q")
		if h, sv := totalText(text); h != countText(hits, "%.0f") || sv != countText(saved, "%.1f") {
			t.Errorf("%s %s: audit's text says %q hits and %q turns saved, its JSON %+v and %+v:\n%s", s.how, s.name, h, sv, hits, saved, text)
		}
		// evaluate says the same of what serving did.
		if s.how != "shadow" {
			var ev struct {
				Logged struct {
					Served *struct {
						Sessions int    `json:"sessions"`
						Hits     bounds `json:"hits"`
						Saved    bounds `json:"saved_turns"`
					} `json:"served"`
				} `json:"logged"`
			}
			out := hoist(t, "evaluate", "--sessions", s.dir, "--json", "-q", "--reps", "100")
			if err := json.Unmarshal([]byte(out), &ev); err != nil || ev.Logged.Served == nil || ev.Logged.Served.Sessions != 1 {
				t.Errorf("%s %s: evaluate --json: %v, no served session:\n%s", s.how, s.name, err, out)
			} else if sv := ev.Logged.Served; sv.Hits != hits || sv.Saved != saved {
				t.Errorf("%s %s: evaluate's served hits %+v and turns %+v, audit's %+v and %+v", s.how, s.name, sv.Hits, sv.Saved, hits, saved)
			}
		}
		if a.Served == 1 {
			servedReports(t, s.how, s.name, s.dir, flowFile, a.Total.Lookups, hits, saved)
		}
		sumTurns += float64(tr.LLMTurnsSkipped)
		sumHits += float64(tr.CallsSkipped)
		estTurns += saved.Est
		estHits += hits.Est
	}
	consolePages(t, sessions, flowFile)
	servedDrift(t, sessions, flowFile)
	t.Logf("summed over %d sessions: truth %.0f turns skipped, %.0f calls answered; audit's estimate %.2f turns, %.2f hits",
		len(sessions), sumTurns, sumHits, estTurns, estHits)
	if sumTurns == 0 || math.Abs(estTurns-sumTurns) > 0.15*sumTurns {
		t.Errorf("audit estimates %.2f turns saved in all, the truth is %.0f: more than 15%% apart", estTurns, sumTurns)
	}
	if sumHits == 0 || math.Abs(estHits-sumHits) > 0.15*sumHits {
		t.Errorf("audit estimates %.2f hits in all, the truth is %.0f: more than 15%% apart", estHits, sumHits)
	}
}

// totalText returns the hits and turns saved of audit's text's total line.
func totalText(text string) (hits, saved string) {
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "total ") {
			continue
		}
		var cols []string
		for _, c := range strings.Split(line, "  ") {
			if c = strings.TrimSpace(c); c != "" {
				cols = append(cols, c)
			}
		}
		if len(cols) > 5 {
			return cols[2], cols[5]
		}
	}
	return "", ""
}

// parseBounds reads a count as the pages write it: "3", or "3.0 (1.0–3.0)".
func parseBounds(text string) bounds {
	var b bounds
	if n, _ := fmt.Sscanf(text, "%g (%g–%g)", &b.Est, &b.Lo, &b.Hi); n == 1 {
		b.Lo, b.Hi = b.Est, b.Est
	}
	return b
}

// copyLogs copies the session and flow logs of dir into root, and returns
// the ids of the sessions.
func copyLogs(t *testing.T, dir, root string) []string {
	t.Helper()
	var ids []string
	logs, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	for _, p := range logs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, filepath.Base(p)), b, 0o600); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(p, ".flow.jsonl") {
			ids = append(ids, strings.TrimSuffix(filepath.Base(p), ".jsonl"))
		}
	}
	return ids
}

// countText is how audit's text writes a count with its bounds.
func countText(b bounds, whole string) string {
	if b.Hi-b.Lo < 1e-9 {
		return fmt.Sprintf(whole, b.Est)
	}
	return fmt.Sprintf("%.1f (%.1f–%.1f)", b.Est, b.Lo, b.Hi)
}

// TestAuditOneTask: sessions of one task (here a .meta.json's task id, as
// one host session's are) are served only the counts of the folds that do
// not hold them, so a flow learned from them with the default folds looks
// nothing up in them; audit says so, and what to do (issue 24, item 4).
func TestAuditOneTask(t *testing.T) {
	logs := t.TempDir()
	var wg sync.WaitGroup
	for n := 1; n <= 4; n++ {
		file := []string{"review-orders.jsonl", "cancel-order.jsonl"}[n%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			procedure(t, file, fmt.Sprintf("c%d@example.com", n), "--record", logs, "--domain", "retail")
		}()
	}
	wg.Wait()
	recorded, _ := filepath.Glob(filepath.Join(logs, "*.jsonl"))
	for _, p := range recorded {
		if strings.HasSuffix(p, ".flow.jsonl") {
			continue
		}
		if err := os.WriteFile(strings.TrimSuffix(p, ".jsonl")+".meta.json", []byte(`{"task_id": "one"}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	flowFile := filepath.Join(t.TempDir(), "retail.flow.json")
	hoist(t, "learn", "-q", "--sessions", logs, "--domain", "retail", "--out", flowFile)
	cmd := exec.Command(testbin.Build(t, "hoist"), "audit", "-q", "--flow", flowFile, "--sessions", logs)
	cmd.Env = testbin.Env()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("audit: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(string(out), "total  ") || !strings.Contains(stderr.String(), "are one task") || !strings.Contains(stderr.String(), "--folds 1") {
		t.Errorf("audit of one task's sessions says nothing of why it looks nothing up:\n%s\n%s", out, stderr.String())
	}
}

// consolePages holds the console's session pages to the same truth: each
// served session's page (its HTML, over HTTP) shows what its lookups
// earned as audit does, and the sessions page's turns saved add up to it.
func consolePages(t *testing.T, sessions []session, flowFile string) {
	t.Helper()
	root := t.TempDir()
	truthOf := map[string]truth{} // by session id
	for _, s := range sessions {
		if s.how == "shadow" {
			continue
		}
		for _, id := range copyLogs(t, s.dir, root) {
			truthOf[id] = s.truth
		}
	}
	base, _ := testbin.StartConsole(t, "--sessions", root, "--flow", flowFile)
	get := func(path string) string {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	list := get("/")
	ids := regexp.MustCompile(`<tr class="session" data-id="([^"]+)"`).FindAllStringSubmatch(list, -1)
	if len(ids) == 0 {
		t.Fatalf("the sessions page lists no session:\n%s", list)
	}
	listed := 0.0
	for _, m := range regexp.MustCompile(`data-saved="([^"]*)"`).FindAllStringSubmatch(list, -1) {
		var x float64
		fmt.Sscan(m[1], &x)
		listed += x
	}
	var audited, estHits, sumTurns, sumHits float64
	for _, m := range ids {
		tr, ok := truthOf[m[1]]
		if !ok {
			t.Errorf("the console lists a session %s none of the runs recorded", m[1])
			continue
		}
		page := get("/session?id=" + url.QueryEscape(m[1]))
		hits := regexp.MustCompile(`data-hits="([^"]*)"`).FindStringSubmatch(page)
		saved := regexp.MustCompile(`LLM turns saved ([^<]*)</dd>`).FindStringSubmatch(page)
		if hits == nil || saved == nil {
			t.Errorf("session %s: its page shows no lookups earned", m[1])
			continue
		}
		sb, hb := parseBounds(saved[1]), parseBounds(hits[1])
		if !sb.holds(float64(tr.LLMTurnsSkipped)) || !hb.holds(float64(tr.CallsSkipped)) {
			t.Errorf("session %s: the truth (%d turns skipped, %d calls answered) is outside the console's bounds (turns %q, hits %q)",
				m[1], tr.LLMTurnsSkipped, tr.CallsSkipped, saved[1], hits[1])
		}
		audited += sb.Est
		estHits += hb.Est
		sumTurns += float64(tr.LLMTurnsSkipped)
		sumHits += float64(tr.CallsSkipped)
		if strings.Contains(page, `badge detour`) || strings.Contains(page, `badge hit`) {
			t.Errorf("session %s: its lookups are badged by the old rule", m[1])
		}
	}
	// The audit of each session (with the flow) is the same earned figure.
	if math.Abs(listed-audited) > 0.05*float64(len(ids)) {
		t.Errorf("the sessions page's turns saved add up to %.2f, the session pages' to %.2f", listed, audited)
	}
	if math.Abs(audited-sumTurns) > 0.15*sumTurns || math.Abs(estHits-sumHits) > 0.15*sumHits {
		t.Errorf("the console estimates %.2f turns saved and %.2f hits in all, the truth is %.0f and %.0f: more than 15%% apart", audited, estHits, sumTurns, sumHits)
	}
	t.Logf("console: %d served sessions, turns saved %.2f on the sessions page, %.2f on the session pages (truth %.0f), hits %.2f (truth %.0f)",
		len(ids), listed, audited, sumTurns, estHits, sumHits)

	// The Savings page sums the same sessions: its totals hold the summed
	// truth within their bounds, their estimates within 15% of it, and
	// are what hoist audit says of the same sessions.
	name := strings.TrimSuffix(filepath.Base(flowFile), ".json")
	savings := get("/savings?name=" + url.QueryEscape(name))
	sh := regexp.MustCompile(`\(<span class="hits">([^<]*)</span> hits`).FindStringSubmatch(savings)
	st := regexp.MustCompile(`<b class="saved-turns">([^<]*) turns</b>`).FindStringSubmatch(savings)
	if sh == nil || st == nil {
		t.Fatalf("the Savings page shows no hits or turns saved:\n%s", savings)
	}
	hb, sb := parseBounds(sh[1]), parseBounds(st[1])
	if !hb.holds(sumHits) || !sb.holds(sumTurns) || math.Abs(sb.Est-sumTurns) > 0.15*sumTurns || math.Abs(hb.Est-sumHits) > 0.15*sumHits {
		t.Errorf("the Savings page says %q hits and %q turns saved; the truth is %.0f calls answered, %.0f turns skipped", sh[1], st[1], sumHits, sumTurns)
	}
	var a auditJSON
	if err := json.Unmarshal([]byte(hoist(t, "audit", "--flow", flowFile, "--sessions", root, "--store", filepath.Join(t.TempDir(), "savings.db"), "--json", "-q")), &a); err != nil {
		t.Fatal(err)
	}
	if want := countText(a.Total.SavedBounds, "%.1f"); st[1] != want {
		t.Errorf("the Savings page says %q turns saved, hoist audit %q", st[1], want)
	}
	if want := countText(a.Total.HitBounds, "%.0f"); sh[1] != want {
		t.Errorf("the Savings page says %q hits, hoist audit %q", sh[1], want)
	}
	t.Logf("Savings page: hits %s, turns saved %s (truth %.0f and %.0f)", sh[1], st[1], sumHits, sumTurns)
}
