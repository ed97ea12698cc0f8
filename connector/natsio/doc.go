// Package natsio is a NATS JetStream source and sink for weir.
//
// # Source
//
// NewSource reads one JetStream stream as a connector.Source[Message]. It
// reads with an ordered consumer (an ephemeral, unacknowledged consumer
// that the client recreates on any gap), so the messages are emitted in
// stream order, without gaps or duplicates, optionally filtered by
// subjects. Each record's timestamp is the message's publish time, as the
// stream stored it, unless SourceOptions.Timestamp says otherwise.
//
// One reader per stream: a stream is one ordered log, so channel 0 of a
// source reads all of it and every other channel emits nothing (it marks
// itself idle, so it does not hold back the watermark). More channels
// never read faster; use weir.SourceOptions{Channels: 1} unless something
// else needs the channels.
//
// Positions: a reader's position is the stream sequence of the last
// message it emitted, encoded as "natsio1:<stream>:<seq>@<created>" ("natsio1:
// <stream>:-@<created>" before the first message), created being the
// stream's creation time in Unix nanoseconds: a restore onto a stream
// deleted and made again under its name is refused (ErrStreamChanged,
// matching connector.ErrInputChanged). A reader restored from a position
// resumes at the next stream sequence. Messages that the stream's own
// retention removed in between are gone: the reader resumes at the first
// one left and logs a warning (for an unfiltered source).
//
// Acknowledgements: the source never acknowledges anything, so reading
// never holds messages back: retention is the stream's own policy, and a
// checkpoint can only be restored while the stream still holds the
// messages after its position. Use limits retention (the default). With
// interest retention the server treats a message delivered to an ordered
// consumer as acknowledged and removes it once every consumer has it, so
// a restore may find it gone (Open logs a warning); work-queue streams
// refuse ordered consumers, and Open refuses them.
//
// Read never blocks for long: it waits at most SourceOptions.FetchWait for
// a first message and then takes what has already arrived, at most
// FetchBatch messages (the first Read also creates the consumer, one
// request to the server). The client fetches ahead on its own goroutines
// and stops fetching while Read is not called (backpressure). It returns connector.Waiting when nothing came, and
// connector.Done only with SourceOptions.StopAtEnd, once every message up to the
// stream's last sequence at Open has been emitted.
//
// # Sink
//
// OpenSink returns a Sink that publishes asynchronously to JetStream.
// Flush waits until the stream has acknowledged every message published
// before it, retrying failed ones; call it in the job's pre-commit hook,
// so a checkpoint commits only when its output is stored:
//
//	sink, err := natsio.OpenSink(ctx, natsio.SinkOptions{URL: url, Subject: "results"})
//	...
//	weir.ForEachSerial(results, func(_ etime.Time, r Result) {
//		if err := sink.Publish(r.ID(), "", r.JSON(), nil); err != nil {
//			... // fail the job
//		}
//	})
//	env.OnPreCommit(func(int64, func(string, []byte) error) error { return sink.Flush(ctx) })
//	_, err = env.Execute(ctx)
//	if err == nil {
//		err = sink.Flush(ctx) // a finished job takes no last checkpoint
//	}
//	sink.Close()
//
// Duplicates: Publish sets the JetStream message id (the Nats-Msg-Id
// header) to the id the caller gives. After a restore, the job replays the
// records after its checkpoint and publishes their messages again; with
// ids that depend only on the record (a source sequence, a window's key,
// bounds and pane), the stream drops the copies. This holds only within
// the stream's duplicate window (StreamConfig.Duplicates, two minutes by
// default): a copy published later than that after the first is stored
// again. A message without an id is never deduplicated.
package natsio
