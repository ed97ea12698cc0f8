package kafkaio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/ledger"
)

// openLedger opens a job spec's Kafka late topic as the job's late-data
// ledger (connector.SinkKind.OpenLedger): each record an entry's line,
// keyed by its id, committed in the job's checkpoint transactions. A scan
// reads what read_committed readers see when it starts, which is the
// cut. A Kafka ledger goes with Kafka results, whose backfill holds the
// archive, which one process at a time may open: that is the
// single-writer lock, so the reader takes none.
func openLedger(_ context.Context, o connector.LedgerOpen) (connector.LedgerReader, error) {
	client := o.Settings
	if o.Results != nil {
		// Late records go through the results sink's client (prepare):
		// its brokers, TLS and SASL read them back.
		client = o.Results
	}
	return &ledgerTopic{brokers: client.Strings("brokers"), topic: o.Settings.String("topic"), reason: o.Reason, auth: AuthFrom(client, "")}, nil
}

// ledgerTopic reads a Kafka late topic.
type ledgerTopic struct {
	brokers []string
	topic   string
	reason  string // of its entries: window_expired or window_expired_partial
	auth    []kgo.Opt
}

func (k *ledgerTopic) Describe(*connector.LedgerCut) string {
	return "the committed records of topic " + k.topic
}

func (k *ledgerTopic) Where() string { return k.Describe(nil) }

func (k *ledgerTopic) Scan(ctx context.Context, _ *connector.LedgerCut, fn func(line []byte) error) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	var bad []string
	var ferr error
	err := ReadCommitted(ctx, k.brokers, []string{k.topic}, time.Second, func(r *kgo.Record) {
		var e ledger.Entry
		if ferr != nil {
			return
		}
		if json.Unmarshal(r.Value, &e) != nil || e.ID == "" || len(e.Windows) == 0 {
			bad = append(bad, fmt.Sprintf("topic %s partition %d offset %d: not a ledger entry", r.Topic, r.Partition, r.Offset))
			return
		}
		e.Kind, e.Reason, e.ArrivedAt = "late", k.reason, r.Timestamp.UnixMilli()
		line, err := json.Marshal(e)
		if err != nil {
			ferr = err
			return
		}
		ferr = fn(line)
	}, k.auth...)
	if errors.Is(err, ErrNoTopic) {
		err = fmt.Errorf("%w (is sinks.late.topic the job's late topic, and has the job run?)", err)
	}
	return bad, errors.Join(err, ferr)
}

func (k *ledgerTopic) Close() error { return nil }
