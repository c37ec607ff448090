package judge

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/hoist-mcp/hoist/jsontext"
)

// An Approval is what lets one call through (docs/approvals.md): the
// judge's yes, a person's continue at the console. It is bound to the
// call it approved by a Digest of the exact method, tool and arguments, to
// the policy that gave it by the policy's version, and to a time by its
// expiry, so that it can never pass another call: the same approval with
// other arguments, under another policy, or later.
type Approval struct {
	// Digest is CallDigest of the call approved.
	Digest string `json:"digest"`
	// Policy names the policy and its version that approved it.
	Policy string `json:"policy"`
	// Expires is when the approval lapses, in Unix milliseconds.
	Expires int64 `json:"expires_unix_ms"`
}

// DefaultApprovalTTL is how long an approval stays good: long enough for
// the call it approved to be sent, too short to keep it for another.
const DefaultApprovalTTL = time.Minute

// CallDigest returns the digest of a call: "sha256:" and the hex SHA-256
// of the canonical JSON (jsontext.Canonical: members sorted, strings
// unescaped and written one way, numbers as written) of {"method",
// "tool", "arguments"}, so that member order, spacing and escapes cannot
// make two different calls one, or one call two. Arguments that are not
// JSON are hashed as their bytes, under another member.
func CallDigest(method, tool string, args []byte) string {
	tree := map[string]any{"method": method, "tool": tool}
	if len(args) == 0 {
		tree["arguments"] = map[string]any{}
	} else if v, ok := jsontext.Parse(args); ok {
		tree["arguments"] = v
	} else {
		tree["arguments_bytes"] = string(args)
	}
	sum := sha256.Sum256([]byte(jsontext.Canonical(tree)))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Approve returns the approval of a call by policy at now, good for ttl
// (DefaultApprovalTTL when 0).
func Approve(method, tool string, args []byte, policy string, now time.Time, ttl time.Duration) Approval {
	if ttl <= 0 {
		ttl = DefaultApprovalTTL
	}
	return Approval{Digest: CallDigest(method, tool, args), Policy: policy, Expires: now.Add(ttl).UnixMilli()}
}

// Passes returns nil when a approves the call of digest under policy at
// now, else why not: an approval of another call, of another policy or
// version, lapsed, or none at all.
func (a Approval) Passes(digest, policy string, now time.Time) error {
	switch {
	case a.Digest == "":
		return fmt.Errorf("no approval")
	case a.Digest != digest:
		return fmt.Errorf("the approval is for another call (%s), not this one (%s)", short(a.Digest), short(digest))
	case a.Policy != policy:
		return fmt.Errorf("the approval is of policy %q, and the policy is now %q", a.Policy, policy)
	case now.UnixMilli() >= a.Expires:
		return fmt.Errorf("the approval lapsed at %s", time.UnixMilli(a.Expires).UTC().Format("2006-01-02T15:04:05.000Z"))
	}
	return nil
}

func short(d string) string {
	if len(d) > 19 {
		return d[:19] + "…"
	}
	return d
}
