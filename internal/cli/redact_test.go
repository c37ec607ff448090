package cli_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hoist-mcp/hoist/binding"
	"github.com/hoist-mcp/hoist/flow"
	"github.com/hoist-mcp/hoist/redact"
)

// seededPII are values of people in the τ² sample: names, emails, user ids,
// order and reservation ids, addresses, zips, dates of birth. None may
// survive anywhere in the redacted copy.
var seededPII = []string{
	"Isabella", "Johansson", "Amelia", "Sanchez", "Sophia", "Silva", "Yara", "Garcia", "Kovacs",
	"isabella.johansson9391@example.com", "amelia.sanchez3631@example.com", "sophia.silva5929@example.com",
	"isabella_johansson_2152", "amelia_sanchez_4739", "sophia_silva_7557", "yara_garcia_1905",
	"#W5565470", "#W3792453", "#W7181492", "#W2575533", "W5565470",
	"3FRNFB", "H8Q05L", "HXDUBJ", "KC18K6",
	"313 Chestnut Street", "812 Cedar Avenue", "141 Cedar Avenue", "225 Sunset Drive", "Chestnut",
	"32286", "77129", "1955-02-01", "1988-06-04",
	"paypal_3024827", "907614527588",
}

// TestRedactLearnsTheSameFlow redacts the τ² sample, learns from the copy
// and from the original, and finds the same flow once the original's
// constants are mapped; and no seeded value survives in any output byte.
func TestRedactLearnsTheSameFlow(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	copyTestdata(t, filepath.Join("tau2", "logs"), logs)
	keyFile := filepath.Join(dir, "key")
	key := []byte("a fixed key for this test, 32 b")
	os.WriteFile(keyFile, key, 0o600)
	out := filepath.Join(dir, "share")
	_, errOut, code := runInProcess(t, "redact", "--sessions", logs, "--out", out, "--key-file", keyFile)
	if code != 0 {
		t.Fatalf("redact: exit %d: %s", code, errOut)
	}
	if strings.Contains(errOut, string(key)) {
		t.Error("the key was printed")
	}
	if _, err := os.Stat(filepath.Join(out, redact.KeyName)); err == nil {
		t.Error("a key file was written although --key-file was given")
	}
	var m redact.Manifest
	mb, err := os.ReadFile(filepath.Join(out, redact.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(mb, &m); err != nil {
		t.Fatal(err)
	}
	if m.Files["session"] != 5 || m.Files["context"] != 5 || m.Files["meta"] != 5 {
		t.Errorf("manifest files %v", m.Files)
	}
	for _, k := range []string{redact.KindEmail, redact.KindID, redact.KindName, redact.KindAddress, redact.KindDigits, redact.KindNumber, redact.KindText} {
		if m.Replaced[k] == 0 {
			t.Errorf("manifest: no %s replaced: %v", k, m.Replaced)
		}
	}

	// Every output byte, before any store is made beside the logs.
	err = filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		lower := bytes.ToLower(b)
		for _, s := range seededPII {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds %q", p, s)
			} else if regexp.MustCompile(`^[A-Za-z]+$`).MatchString(s) && bytes.Contains(lower, []byte(strings.ToLower(s))) {
				t.Errorf("%s holds %q in lower case", p, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	p := redact.NewPseudonymizer(key, m.KeptWords)
	for _, domain := range []string{"retail", "airline"} {
		t.Run(domain, func(t *testing.T) {
			learnFlow := func(sessions, name string) *flow.Flow {
				f := filepath.Join(dir, domain+"-"+name+".flow.json")
				_, errOut, code := runInProcess(t, "learn", "--sessions", sessions, "--store", filepath.Join(dir, name+".db"),
					"--domain", domain, "--min-support", "1", "-o", f)
				if code != 0 {
					t.Fatalf("learn %s: exit %d: %s", name, code, errOut)
				}
				fl, err := flow.Load(f)
				if err != nil {
					t.Fatal(err)
				}
				return fl
			}
			orig := learnFlow(logs, "orig")
			red := learnFlow(out, "redacted")
			if len(orig.Sites) == 0 {
				t.Fatal("nothing learned")
			}
			// Map the original's constants into the copy's values.
			for i := range orig.Sites {
				for j := range orig.Sites[i].Lookups {
					for k := range orig.Sites[i].Lookups[j].Bindings {
						b := &orig.Sites[i].Lookups[j].Bindings[k]
						for arg, x := range b.Args {
							if x.IsConst() {
								mapped, err := binding.Parse(string(p.JSON(nil, []byte(x.String()))))
								if err != nil {
									t.Fatal(err)
								}
								b.Args[arg] = mapped
							}
						}
					}
				}
			}
			orig.Learned.Digest, red.Learned.Digest = "", ""
			a, _ := orig.Marshal()
			b, _ := red.Marshal()
			if d := cmp.Diff(string(a), string(b)); d != "" {
				t.Errorf("the copy learns another flow (-original mapped +copy):\n%s", d)
			}
		})
	}
}

// TestRedactGeneratesAKey: without --key-file, a key is drawn and written
// beside the copy with mode 0600, and the copy refuses to overwrite.
func TestRedactGeneratesAKey(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	copyTestdata(t, filepath.Join("sessions", "flow"), logs)
	os.WriteFile(filepath.Join(logs, "notes.txt"), []byte("hello"), 0o600)
	out := filepath.Join(dir, "share")
	_, errOut, code := runInProcess(t, "redact", "--sessions", logs, "--out", out)
	if code != 0 {
		t.Fatalf("redact: exit %d: %s", code, errOut)
	}
	fi, err := os.Stat(filepath.Join(out, redact.KeyName))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v", fi.Mode().Perm())
	}
	key, _ := os.ReadFile(filepath.Join(out, redact.KeyName))
	if strings.Contains(errOut, strings.TrimSpace(string(key))) {
		t.Error("the key was printed")
	}
	if !strings.Contains(errOut, "skipped notes.txt") || !strings.Contains(errOut, "redact.key") {
		t.Errorf("stderr: %s", errOut)
	}
	if _, err := os.Stat(filepath.Join(out, "notes.txt")); err == nil {
		t.Error("notes.txt was copied")
	}
	for _, f := range []string{"20261130T000801.483Z-29321.jsonl", "20261130T000801.483Z-29321.flow.jsonl"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	// The flow log's offered arguments are redacted as the session's values.
	b, _ := os.ReadFile(filepath.Join(out, "20261130T000801.483Z-29321.flow.jsonl"))
	if !bytes.Contains(b, []byte(`"binding":{"text":"$result.next"}`)) {
		t.Errorf("flow log lost its bindings: %s", b)
	}
	if _, _, code := runInProcess(t, "redact", "--sessions", logs, "--out", out); code != 1 {
		t.Errorf("redact over a full directory: exit %d, want 1", code)
	}
	if _, _, code := runInProcess(t, "redact", "--sessions", logs, "--out", filepath.Join(logs, "x")); code != 2 {
		t.Errorf("redact into its input: exit %d, want 2", code)
	}
}
