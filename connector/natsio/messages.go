package natsio

import (
	"context"
	"strconv"
	"time"

	"github.com/weirstream/weir/connector"
)

// openTimeout bounds OpenSink for a job spec's sink: connecting and
// checking that a stream stores the subject.
const openTimeout = 30 * time.Second

// openMessages opens a nats sink of a job spec: each message is published
// to the subject with its ID, prefixed by the sink's name (and /) for
// every sink but the first results one, so that two sinks whose subjects
// one stream stores do not drop each other's messages as duplicates.
func openMessages(ctx context.Context, o connector.MessagesOpen) (connector.Sink[connector.Message], error) {
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	s, err := OpenSink(ctx, SinkOptions{URL: o.Settings.String("url"), Subject: o.Settings.String("subject"), Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	m := &messages{Sink: s, run: o.Run, records: o.Role != connector.RoleResults}
	if o.Name != "results" {
		m.prefix = o.Name + "/"
	}
	return m, nil
}

// messages publishes connector.Messages through a Sink (idempotent: the
// stream stores each id once within its duplicate window).
type messages struct {
	*Sink
	prefix string
	// records: the sink takes late records or dead letters, whose ids
	// are their entry ids, qualified here by the run (a later run's
	// record at the same position is another message, not a duplicate).
	records bool
	run     func() int64
}

func (m *messages) Write(_ context.Context, batch []connector.Message) error {
	for i := range batch {
		msg := &batch[i]
		h := make(map[string]string, len(msg.Headers))
		for _, x := range msg.Headers {
			h[x.Key] = string(x.Value)
		}
		id := m.prefix + msg.ID
		if m.records {
			id = m.prefix + strconv.FormatInt(m.run(), 10) + "/" + msg.ID
		}
		if err := m.Publish(id, "", msg.Value, h); err != nil {
			return err
		}
	}
	return nil
}
