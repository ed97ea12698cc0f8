package memstate_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/state/memstate"
	"github.com/weirstream/weir/state/statetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestKV(t *testing.T) {
	statetest.Run(t, func(*testing.T) state.KV { return memstate.NewKV() }, statetest.ExactStats())
}

func BenchmarkKV(b *testing.B) {
	statetest.Bench(b, func(*testing.B) state.KV { return memstate.NewKV() })
}
