package migrations

import "testing"

func TestAllNumberedWithoutGaps(t *testing.T) {
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) == 0 {
		t.Fatal("no migrations embedded")
	}
	for i, m := range all {
		if m.Version != i+1 || m.SQL == "" {
			t.Errorf("migration %d: %+v", i, m.Name)
		}
	}
	if Latest() != len(all) {
		t.Errorf("Latest() = %d, want %d", Latest(), len(all))
	}
}
