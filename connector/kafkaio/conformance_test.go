package kafkaio

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/connectortest"
	"github.com/weirstream/weir/etime"
)

// TestConformance runs the source conformance suite on a 3-partition
// topic of 1000 records.
func TestConformance(t *testing.T) {
	brokers := cluster(t, "in", 3)
	var recs []*kgo.Record
	for i := range 1000 {
		recs = append(recs, rec(int32(i%3), "k", etime.Time(i)))
	}
	produce(t, brokers, "in", recs...)
	connectortest.Run(t, connectortest.Source[event]{
		New: func(t testing.TB) weir.Source[event] {
			src, err := NewSource(SourceOptions[event]{Brokers: brokers, Topic: "in", Decode: decodeEvent, StopAtEnd: true, MaxPollRecords: 100})
			if err != nil {
				t.Fatal(err)
			}
			return src
		},
		Records:    1000,
		ID:         func(e event) string { return fmt.Sprint(e.P, "/", e.Off) },
		MaxPerRead: 100,
	})
}
