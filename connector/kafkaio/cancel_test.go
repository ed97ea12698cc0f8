package kafkaio

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/connectortest"
	"github.com/weirstream/weir/etime"
)

// cancelBound is how soon after its cancellation a job must end.
const cancelBound = time.Second

// A job cancelled while its Kafka source opens (the broker takes the
// metadata request and never answers; Open's own timeout is 30s) ends at
// once, and leaves no goroutine of the client behind.
func TestCancelDuringOpen(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // last: after the listener closed
	addr, accepted := connectortest.SilentListener(t)
	src, err := NewSource(SourceOptions[*Record]{Brokers: []string{addr}, Topic: "t", Decode: Raw})
	if err != nil {
		t.Fatal(err)
	}
	connectortest.StopsOnCancel(t, src, connectortest.Closed(accepted), cancelBound)
}

// A job cancelled while its Kafka source reads a live topic that gets no
// records ends at once.
func TestCancelWhileReading(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	brokers := cluster(t, "quiet", 2)
	src, err := NewSource(SourceOptions[*Record]{Brokers: brokers, Topic: "quiet", Decode: Raw, WatermarkInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// The reader publishes its partitions at a watermark tick, once it
	// started reading: then it reads a live topic.
	reading := make(chan struct{})
	src = &watchInputs{Source: src, reading: reading}
	connectortest.StopsOnCancel(t, src, connectortest.Closed(reading), cancelBound)
}

// watchInputs wraps a source so that reading is closed once its reader
// reports inputs (it reads).
type watchInputs struct {
	weir.Source[*Record]
	reading chan struct{}
}

func (w *watchInputs) Open(ctx context.Context, ch, n int) (weir.SourceReader[*Record], error) {
	r, err := w.Source.Open(ctx, ch, n)
	if err != nil {
		return nil, err
	}
	return &watchedReader{reader: r.(*reader[*Record]), reading: w.reading}, nil
}

type watchedReader struct {
	*reader[*Record]
	reading   chan struct{}
	signalled bool
}

func (r *watchedReader) Read(ctx context.Context, out weir.SourceOutput[*Record]) (weir.ReadStatus, error) {
	st, err := r.reader.Read(ctx, out)
	if !r.signalled && len(r.Inputs()) == 2 {
		r.signalled = true
		close(r.reading)
	}
	return st, err
}

// Read gives up when its context is done: on a reader that has not
// started, its first Read (which resolves the start offsets) fails with
// the context's error at once.
func TestReadCancelled(t *testing.T) {
	brokers := cluster(t, "t", 1)
	src, err := NewSource(SourceOptions[*Record]{Brokers: brokers, Topic: "t", Decode: Raw})
	if err != nil {
		t.Fatal(err)
	}
	r, err := src.Open(context.Background(), 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	_, err = r.Read(ctx, nopOutput{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Read with a cancelled context = %v, want context.Canceled", err)
	}
	if took := time.Since(start); took > cancelBound {
		t.Errorf("Read took %v with a cancelled context", took)
	}
}

// nopOutput drops what a reader emits.
type nopOutput struct{}

func (nopOutput) Emit(etime.Time, *Record) {}
func (nopOutput) EmitWatermark(etime.Time) {}
func (nopOutput) MarkIdle()                {}
func (nopOutput) MarkActive()              {}
