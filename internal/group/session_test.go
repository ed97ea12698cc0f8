package group

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSessionLost: a member whose group session the coordinator dropped
// (UNKNOWN_MEMBER_ID after a stall longer than the session timeout) or
// whose join failed transiently joins again; a fenced instance and other
// group errors end it.
func TestSessionLost(t *testing.T) {
	for _, c := range []struct {
		err  error
		lost bool
	}{
		{&kgo.ErrGroupSession{Err: kerr.UnknownMemberID}, true},
		{fmt.Errorf("poll: %w", &kgo.ErrGroupSession{Err: kerr.UnknownMemberID}), true},
		{&kgo.ErrGroupSession{Err: kerr.CoordinatorNotAvailable}, true},
		{&kgo.ErrGroupSession{Err: kerr.FencedInstanceID}, false},
		{&kgo.ErrGroupSession{Err: kerr.GroupAuthorizationFailed}, false},
		{kerr.UnknownMemberID, false},
		{errors.New("other"), false},
	} {
		if got := sessionLost(c.err); got != c.lost {
			t.Errorf("sessionLost(%v) = %v, want %v", c.err, got, c.lost)
		}
	}
}
