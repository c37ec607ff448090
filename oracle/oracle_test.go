package oracle_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/hoist-mcp/hoist/oracle"
)

const model = "system-one-test"

// keyed is the oracle behind Limit in its test: it answers every question
// that can be asked, and keys each as jev would for model.
type keyed struct{}

func (keyed) Key(q oracle.Question) string { return oracle.Key(model, q) }

func (k keyed) Ask(_ context.Context, q oracle.Question) oracle.Answer {
	if why := q.Incomplete(); why != "" {
		return oracle.Answer{Key: k.Key(q), Why: oracle.Unaskable, Reason: why}
	}
	return oracle.Answer{Key: k.Key(q), Answered: true, PYes: 1}
}

func confirmQ(reply string) oracle.Question {
	return oracle.Confirmation(oracle.Exchange{
		Said:  "I can cancel order #W1a (1 item, $54.04) for the reason 'no longer needed'. Shall I go ahead?",
		Reply: reply,
	}, oracle.Call{Tool: "cancel_pending_order", Arguments: []byte(`{"order_id":"#W1a","reason":"no longer needed"}`)})
}

func TestLimit(t *testing.T) {
	ctx := context.Background()
	l := oracle.Limit(keyed{}, 2)
	unaskable := oracle.Confirmation(oracle.Exchange{}, oracle.Call{Tool: "cancel_pending_order"})
	if a := l.Ask(ctx, unaskable); a.Why != oracle.Unaskable {
		t.Errorf("unaskable: %+v", a)
	}
	for i := range 2 {
		if a := l.Ask(ctx, confirmQ(fmt.Sprint("yes ", i))); !a.Answered {
			t.Fatalf("question %d: %+v, want an answer", i, a)
		}
	}
	q := confirmQ("yes 3")
	a := l.Ask(ctx, q)
	if a.Answered || a.Why != oracle.Spent || a.Reason != "the session's 2 questions are spent" || a.Key != oracle.Key(model, q) {
		t.Errorf("third question: %+v, want spent, with its key", a)
	}
	if l.Asked() != 2 {
		t.Errorf("Asked() = %d, want 2 (the unaskable one and the spent one do not count)", l.Asked())
	}
	if a := oracle.Limit(keyed{}, 0).Ask(ctx, q); a.Why != oracle.Spent {
		t.Errorf("a budget of 0: %+v", a)
	}

	// Concurrent questions spend the budget exactly.
	l = oracle.Limit(keyed{}, 50)
	var wg sync.WaitGroup
	var mu sync.Mutex
	answered := 0
	for i := range 200 {
		wg.Go(func() {
			if l.Ask(ctx, confirmQ(fmt.Sprint("ok ", i))).Answered {
				mu.Lock()
				answered++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if answered != 50 || l.Asked() != 50 {
		t.Errorf("%d answered, Asked() %d; want 50", answered, l.Asked())
	}
}
