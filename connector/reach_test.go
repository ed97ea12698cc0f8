package connector

import (
	"errors"
	"testing"
	"time"
)

// TestReach: a reader's outage lasts until that reader's OK; another
// reader's records say nothing of it (one broker of several down); the
// longest outage under way is the one told; a nil Reach keeps nothing.
func TestReach(t *testing.T) {
	var r Reach
	t0 := time.Unix(1000, 0)
	if since, _ := r.Failing(); !since.IsZero() {
		t.Fatal("a new Reach is failing")
	}
	r.Fail(1, t0, errors.New("refused 1"))
	r.Fail(1, t0.Add(time.Second), errors.New("refused 1 again"))
	r.Fail(0, t0.Add(2*time.Second), errors.New("refused 0"))
	r.OK(2) // another reader reaches its broker
	if since, err := r.Failing(); !since.Equal(t0) || err == nil || err.Error() != "refused 1 again" {
		t.Fatalf("failing since %v (%v), want %v with reader 1's last failure", since, err, t0)
	}
	r.OK(1)
	if since, err := r.Failing(); !since.Equal(t0.Add(2*time.Second)) || err.Error() != "refused 0" {
		t.Fatalf("failing since %v (%v), want reader 0's outage", since, err)
	}
	r.OK(0)
	if since, _ := r.Failing(); !since.IsZero() {
		t.Fatal("every reader reaches, yet failing")
	}
	var none *Reach
	none.Fail(0, t0, errors.New("x"))
	none.OK(0)
	if since, _ := none.Failing(); !since.IsZero() {
		t.Fatal("a nil Reach is failing")
	}
}
