package natsio_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/natsio"
	"github.com/weirstream/weir/etime"
	"github.com/weirstream/weir/internal/testenv"
)

// ---------------------------------------------------------------- helpers

// runServer starts an embedded nats-server with JetStream storing in dir,
// on port (-1: a random one). It is shut down at cleanup (Shutdown is
// idempotent, so a test may stop it earlier).
func runServer(t testing.TB, dir string, port int) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir,
		NoLog: true, NoSigs: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("embedded nats-server not ready")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

func serverPort(s *server.Server) int { return s.Addr().(*net.TCPAddr).Port }

// connect returns a JetStream context on url, closed at cleanup.
func connect(t testing.TB, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// createStream creates a file-stored stream with limits retention.
func createStream(t testing.TB, js jetstream.JetStream, name string, subjects ...string) jetstream.Stream {
	t.Helper()
	st, err := js.CreateStream(t.Context(), jetstream.StreamConfig{
		Name: name, Subjects: subjects, Storage: jetstream.FileStorage, Duplicates: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// payload is message i's JSON body.
func payload(i int) []byte {
	return fmt.Appendf(nil, `{"i":%d,"user":"u%03d","amount":%d}`, i, i%100, 1+i%500)
}

// publish publishes n messages i = from..from+n-1 to subject (subject may
// contain %d, replaced by i%mod) and returns their stream sequences.
func publish(t testing.TB, js jetstream.JetStream, subject string, mod, from, n int) []uint64 {
	t.Helper()
	futs := make([]jetstream.PubAckFuture, 0, n)
	for i := from; i < from+n; i++ {
		subj := subject
		if strings.Contains(subj, "%d") {
			subj = fmt.Sprintf(subject, i%mod)
		}
		// A loaded machine acknowledges slowly: wait for room rather
		// than fail after the default 200ms (as the sink waits AckTimeout).
		f, err := js.PublishAsync(subj, payload(i), jetstream.WithStallWait(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		futs = append(futs, f)
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(30 * time.Second):
		t.Fatal("publish: no acks after 30s")
	}
	seqs := make([]uint64, n)
	for i, f := range futs {
		select {
		case ack := <-f.Ok():
			seqs[i] = ack.Sequence
		case err := <-f.Err():
			t.Fatal(err)
		}
	}
	return seqs
}

type rec struct {
	ts etime.Time
	m  natsio.Message
}

// fakeOut is a weir.SourceOutput that records what a reader emits.
type fakeOut struct {
	recs       []rec
	wms        []etime.Time
	idle, actv int
	lost       int64
}

func (o *fakeOut) Emit(ts etime.Time, m natsio.Message) { o.recs = append(o.recs, rec{ts, m}) }
func (o *fakeOut) EmitWatermark(wm etime.Time)          { o.wms = append(o.wms, wm) }
func (o *fakeOut) MarkIdle()                            { o.idle++ }
func (o *fakeOut) MarkActive()                          { o.actv++ }
func (o *fakeOut) Lost(n int64, _ string)               { o.lost += n }

func (o *fakeOut) seqs() []uint64 {
	s := make([]uint64, len(o.recs))
	for i, r := range o.recs {
		s[i] = r.m.Sequence
	}
	return s
}

// open opens channel ch of n of src as a checkpointed reader.
func open(t testing.TB, src weir.Source[natsio.Message], ch, n int) weir.SourceReader[natsio.Message] {
	t.Helper()
	r, err := src.Open(context.Background(), ch, n)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.(weir.CheckpointedReader); !ok {
		t.Fatalf("reader %T is not a weir.CheckpointedReader", r)
	}
	return r
}

// drain calls Read until it returns Done, or until out holds at least
// stopAfter records when stopAfter > 0, and returns the last status.
func drain(t testing.TB, r weir.SourceReader[natsio.Message], out *fakeOut, stopAfter int) weir.ReadStatus {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		st, err := r.Read(context.Background(), out)
		if err != nil {
			t.Fatal(err)
		}
		if st == weir.Done || stopAfter > 0 && len(out.recs) >= stopAfter {
			return st
		}
	}
	t.Fatalf("reader not done after 60s (%d records)", len(out.recs))
	return 0
}

// drainRestored opens a reader of opts (one channel), restores pos and
// reads until Done.
func drainRestored(t testing.TB, opts natsio.SourceOptions, pos []byte) *fakeOut {
	t.Helper()
	r := open(t, natsio.NewSource(opts), 0, 1)
	defer r.Close()
	if err := r.(weir.CheckpointedReader).RestorePosition(pos); err != nil {
		t.Fatal(err)
	}
	var out fakeOut
	drain(t, r, &out, 0)
	return &out
}

func seqRange(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

// checkSeqs fails unless got == want, naming the first difference.
func checkSeqs(t testing.TB, what string, got, want []uint64) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Fatalf("%s: %d sequences, want %d; first difference at %d: %d, want %d", what, len(got), len(want), i, got[i], want[i])
		}
	}
	t.Fatalf("%s: %d sequences, want %d", what, len(got), len(want))
}

// checkPayloads fails unless record k carries message i0+k's payload.
func checkPayloads(t testing.TB, recs []rec, i0 int) {
	t.Helper()
	for k, r := range recs {
		var v struct{ I int }
		if err := json.Unmarshal(r.m.Data, &v); err != nil || v.I != i0+k {
			t.Fatalf("record %d (seq %d): payload %s, want i=%d (%v)", k, r.m.Sequence, r.m.Data, i0+k, err)
		}
	}
}

// noLeaks makes the test fail if goroutines started after it was called
// are still running at the end of the test.
func noLeaks(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

// ------------------------------------------------------------------ source

// TestSourceJob reads 5000 messages through a weir job: every message
// arrives once, in stream order, with its sequence, payload and publish
// time, and the record timestamp is the publish time. With three channels
// the result is the same (channel 0 reads, the others are idle). The
// reader leaves no goroutine behind.
func TestSourceJob(t *testing.T) {
	const n = 5000
	s := runServer(t, t.TempDir(), -1)
	js := connect(t, s.ClientURL())
	st := createStream(t, js, "ORDERS", "orders.>")
	seqs := publish(t, js, "orders.u%d", 7, 0, n)
	checkSeqs(t, "published", seqs, seqRange(1, n))
	// The stored publish times, to compare with.
	stored := make([]etime.Time, n+1)
	for seq := uint64(1); seq <= n; seq++ {
		m, err := st.GetMsg(t.Context(), seq)
		if err != nil {
			t.Fatal(err)
		}
		stored[seq] = etime.FromTime(m.Time)
	}
	for _, channels := range []int{1, 3} {
		t.Run(fmt.Sprintf("channels=%d", channels), func(t *testing.T) {
			noLeaks(t)
			env, err := weir.NewEnv(weir.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			src := natsio.NewSource(natsio.SourceOptions{URL: s.ClientURL(), Stream: "ORDERS", StopAtEnd: true})
			stream := weir.FromSource(env, "nats", src, weir.SourceOptions{Channels: channels})
			got := weir.Collect(stream)
			var mu sync.Mutex
			var tss []etime.Time
			weir.ForEach(stream, func(ts etime.Time, _ natsio.Message) { mu.Lock(); tss = append(tss, ts); mu.Unlock() })
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			rep, err := env.Execute(ctx)
			if err != nil {
				t.Fatal(err)
			}
			items := got.Items()
			if len(items) != n || len(tss) != n {
				t.Fatalf("%d records (%d timestamps), want %d", len(items), len(tss), n)
			}
			for k, m := range items {
				seq := uint64(k + 1)
				if m.Sequence != seq {
					t.Fatalf("record %d: sequence %d, want %d", k, m.Sequence, seq)
				}
				if want := fmt.Sprintf("orders.u%d", k%7); m.Subject != want {
					t.Fatalf("record %d: subject %q, want %q", k, m.Subject, want)
				}
				if string(m.Data) != string(payload(k)) {
					t.Fatalf("record %d: data %s, want %s", k, m.Data, payload(k))
				}
				if m.Published != stored[seq] || m.Published == etime.MinTime {
					t.Fatalf("record %d: published %v, stored %v", k, m.Published, stored[seq])
				}
				if tss[k] != m.Published {
					t.Fatalf("record %d: timestamp %v, want the publish time %v", k, tss[k], m.Published)
				}
			}
			if rep.SourceRecords["nats"] != n {
				t.Fatalf("report: %d source records, want %d", rep.SourceRecords["nats"], n)
			}
		})
	}
}

// TestSourceCheckpointRestore cuts a read at several points: the records
// read before the snapshot plus those a fresh reader restored from it
// reads are exactly the stream, in order. One cut also restarts the
// server (same store) between the two readers.
func TestSourceCheckpointRestore(t *testing.T) {
	const n = 3000
	dir := t.TempDir()
	s := runServer(t, dir, -1)
	port := serverPort(s)
	url := s.ClientURL()
	js := connect(t, url)
	createStream(t, js, "LOG", "log")
	publish(t, js, "log", 1, 0, n)
	opts := natsio.SourceOptions{URL: url, Stream: "LOG", StopAtEnd: true, FetchBatch: 64, FetchWait: 20 * time.Millisecond}

	for _, cut := range []int{0, 1, 777, 2999, 3000} {
		t.Run(fmt.Sprintf("cut=%d", cut), func(t *testing.T) {
			noLeaks(t)
			src := natsio.NewSource(opts)
			r1 := open(t, src, 0, 1)
			var out1 fakeOut
			if cut > 0 {
				drain(t, r1, &out1, cut)
			}
			pos, err := r1.(weir.CheckpointedReader).SnapshotPosition()
			if err != nil {
				t.Fatal(err)
			}
			if err := r1.Close(); err != nil {
				t.Fatal(err)
			}
			pos0, _, _ := strings.Cut(string(pos), "@")
			if cut == 0 && pos0 != "natsio1:LOG:-" {
				t.Fatalf("position before any record: %q", pos)
			}
			if cut > 0 && pos0 != fmt.Sprintf("natsio1:LOG:%d", len(out1.recs)) {
				t.Fatalf("position %q after %d records", pos, len(out1.recs))
			}
			r2 := open(t, natsio.NewSource(opts), 0, 1)
			if err := r2.(weir.CheckpointedReader).RestorePosition(pos); err != nil {
				t.Fatal(err)
			}
			var out2 fakeOut
			if st := drain(t, r2, &out2, 0); st != weir.Done {
				t.Fatalf("status %v", st)
			}
			if err := r2.Close(); err != nil {
				t.Fatal(err)
			}
			checkSeqs(t, "before + after the restore", append(out1.seqs(), out2.seqs()...), seqRange(1, n))
			checkPayloads(t, append(out1.recs, out2.recs...), 0)
		})
	}

	t.Run("server restart", func(t *testing.T) {
		src := natsio.NewSource(opts)
		r1 := open(t, src, 0, 1)
		var out1 fakeOut
		drain(t, r1, &out1, 1500)
		pos, _ := r1.(weir.CheckpointedReader).SnapshotPosition()
		r1.Close()
		s.Shutdown()
		s.WaitForShutdown()
		s2 := runServer(t, dir, port)
		if s2.ClientURL() != url {
			t.Fatalf("restarted at %s, want %s", s2.ClientURL(), url)
		}
		out2 := drainRestored(t, opts, pos)
		checkSeqs(t, "before the restart + after", append(out1.seqs(), out2.seqs()...), seqRange(1, n))
		checkPayloads(t, append(out1.recs, out2.recs...), 0)
	})
}

// TestSourceRestoreRetentionGap: messages after a restored position that
// the stream removed (a purge here, as its limits would) are counted as
// lost to the output (connector.LossOutput), and the reader goes on at
// the first message the stream kept.
func TestSourceRestoreRetentionGap(t *testing.T) {
	s := runServer(t, t.TempDir(), -1)
	url := s.ClientURL()
	js := connect(t, url)
	st := createStream(t, js, "GAP", "gap")
	publish(t, js, "gap", 1, 0, 10)
	opts := natsio.SourceOptions{URL: url, Stream: "GAP", StopAtEnd: true, FetchBatch: 4, FetchWait: 20 * time.Millisecond}
	r1 := open(t, natsio.NewSource(opts), 0, 1)
	var out1 fakeOut
	drain(t, r1, &out1, 4)
	pos, err := r1.(weir.CheckpointedReader).SnapshotPosition()
	if err != nil {
		t.Fatal(err)
	}
	r1.Close()
	n := uint64(len(out1.recs))
	// The stream removes every message below 8: those after the
	// position (n+1..7) were never read.
	if err := st.Purge(t.Context(), jetstream.WithPurgeSequence(8)); err != nil {
		t.Fatal(err)
	}
	out2 := drainRestored(t, opts, pos)
	checkSeqs(t, "after the gap", out2.seqs(), seqRange(8, 10))
	if out2.lost != int64(7-n) {
		t.Fatalf("the output was told of %d lost messages, want %d (sequences %d to 7)", out2.lost, 7-n, n+1)
	}
}

// TestSourceRestoreRefused: positions of another stream, positions that
// are not natsio positions, and a restore after reading are refused.
func TestSourceRestoreRefused(t *testing.T) {
	s := runServer(t, t.TempDir(), -1)
	js := connect(t, s.ClientURL())
	createStream(t, js, "A", "a")
	createStream(t, js, "AB", "ab")
	publish(t, js, "a", 1, 0, 10)
	src := natsio.NewSource(natsio.SourceOptions{URL: s.ClientURL(), Stream: "A", StopAtEnd: true})
	r := open(t, src, 0, 1)
	defer r.Close()
	cr := r.(weir.CheckpointedReader)
	for _, pos := range []string{"natsio1:AB:5", "natsio1:B:5", "natsio1:A", "natsio1:A:x", "natsio1:A:-5", "genio1:5", "", "natsio2:A:5"} {
		err := cr.RestorePosition([]byte(pos))
		if err == nil {
			t.Fatalf("position %q accepted", pos)
		}
		if strings.HasPrefix(pos, "natsio1:AB") && !strings.Contains(err.Error(), `position of stream "AB"`) {
			t.Fatalf("position %q: unclear error %v", pos, err)
		}
	}
	if err := cr.RestorePosition([]byte("natsio1:A:4")); err != nil {
		t.Fatal(err)
	}
	var out fakeOut
	drain(t, r, &out, 0)
	checkSeqs(t, "after restoring 4", out.seqs(), seqRange(5, 10))
	if err := cr.RestorePosition([]byte("natsio1:A:1")); err == nil {
		t.Fatal("RestorePosition after Read accepted")
	}
	// Idle channels check the stream too.
	idle := open(t, src, 1, 2)
	if err := idle.(weir.CheckpointedReader).RestorePosition([]byte("natsio1:AB:3")); err == nil {
		t.Fatal("idle channel accepted another stream's position")
	}
	if err := idle.(weir.CheckpointedReader).RestorePosition([]byte("natsio1:A:3")); err != nil {
		t.Fatal(err)
	}
}

// TestSourceRestoreRecreated: a position keeps the stream's creation
// time; a restore onto the stream deleted and made again under its name
// is refused as another input (connector.ErrInputChanged), naming
// --fresh; a position of an older weir, without it, is taken.
func TestSourceRestoreRecreated(t *testing.T) {
	s := runServer(t, t.TempDir(), -1)
	js := connect(t, s.ClientURL())
	createStream(t, js, "R", "r")
	publish(t, js, "r", 1, 0, 10)
	src := natsio.NewSource(natsio.SourceOptions{URL: s.ClientURL(), Stream: "R", StopAtEnd: true})
	r := open(t, src, 0, 1)
	var out fakeOut
	drain(t, r, &out, 0)
	pos, err := r.(weir.CheckpointedReader).SnapshotPosition()
	r.Close()
	if err != nil || !strings.HasPrefix(string(pos), "natsio1:R:10@") {
		t.Fatalf("position %q, %v: want the sequence and the stream's creation time", pos, err)
	}
	again := open(t, src, 0, 1)
	if err := again.(weir.CheckpointedReader).RestorePosition(pos); err != nil {
		t.Fatalf("the same stream: %v", err)
	}
	again.Close()
	if err := js.DeleteStream(t.Context(), "R"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond) // another creation time
	createStream(t, js, "R", "r")
	publish(t, js, "r", 1, 0, 20)
	fresh := open(t, src, 0, 1)
	defer fresh.Close()
	err = fresh.(weir.CheckpointedReader).RestorePosition(pos)
	if !errors.Is(err, connector.ErrInputChanged) || !strings.Contains(err.Error(), "--fresh") {
		t.Fatalf("a restore onto the stream made again: %v, want connector.ErrInputChanged", err)
	}
	if err := fresh.(weir.CheckpointedReader).RestorePosition([]byte("natsio1:R:10")); err != nil {
		t.Fatalf("a position without the creation time: %v", err)
	}
}

// TestSourceStartAndFilter: start positions (sequence, time), subject
// filters, and StopAtEnd when the stream's last message does not match
// the filter or nothing matches.
func TestSourceStartAndFilter(t *testing.T) {
	s := runServer(t, t.TempDir(), -1)
	url := s.ClientURL()
	js := connect(t, url)
	st := createStream(t, js, "EV", "ev.>")
	// 300 messages: ev.0, ev.1, ev.2 in turn; then 100 more after a pause.
	publish(t, js, "ev.%d", 3, 0, 300)
	time.Sleep(20 * time.Millisecond)
	publish(t, js, "ev.%d", 3, 300, 100)
	m301, err := st.GetMsg(t.Context(), 301)
	if err != nil {
		t.Fatal(err)
	}
	publish(t, js, "ev.x", 1, 400, 1) // seq 401, matches no filter below
	read := func(o natsio.SourceOptions) *fakeOut {
		t.Helper()
		o.URL, o.Stream, o.StopAtEnd = url, "EV", true
		r := open(t, natsio.NewSource(o), 0, 1)
		defer r.Close()
		var out fakeOut
		if st := drain(t, r, &out, 0); st != weir.Done {
			t.Fatalf("status %v", st)
		}
		return &out
	}
	checkSeqs(t, "start at 250", read(natsio.SourceOptions{Start: natsio.StartAtSequence(250)}).seqs(), seqRange(250, 401))
	checkSeqs(t, "start at the publish time of 301", read(natsio.SourceOptions{Start: natsio.StartAtTime(m301.Time)}).seqs(), seqRange(301, 401))
	checkSeqs(t, "start past the end", read(natsio.SourceOptions{Start: natsio.StartAtSequence(402)}).seqs(), nil)

	var ev1 []uint64
	for seq := uint64(2); seq <= 400; seq += 3 {
		ev1 = append(ev1, seq)
	}
	out := read(natsio.SourceOptions{Subjects: []string{"ev.1"}})
	checkSeqs(t, "filter ev.1", out.seqs(), ev1)
	for _, r := range out.recs {
		if r.m.Subject != "ev.1" {
			t.Fatalf("filter ev.1 emitted %q", r.m.Subject)
		}
	}
	var ev02 []uint64
	for seq := uint64(1); seq <= 400; seq++ {
		if (seq-1)%3 != 1 {
			ev02 = append(ev02, seq)
		}
	}
	checkSeqs(t, "filter ev.0 and ev.2", read(natsio.SourceOptions{Subjects: []string{"ev.0", "ev.2"}}).seqs(), ev02)
	checkSeqs(t, "filter matching nothing", read(natsio.SourceOptions{Subjects: []string{"ev.none"}}).seqs(), nil)
	ev1From300 := slices.DeleteFunc(slices.Clone(ev1), func(seq uint64) bool { return seq < 300 })
	checkSeqs(t, "filter ev.1 from 300", read(natsio.SourceOptions{Subjects: []string{"ev.1"}, Start: natsio.StartAtSequence(300)}).seqs(), ev1From300)

	// StopAtEnd ignores what is published after Open.
	r := open(t, natsio.NewSource(natsio.SourceOptions{URL: url, Stream: "EV", StopAtEnd: true, Start: natsio.StartAtSequence(391)}), 0, 1)
	defer r.Close()
	publish(t, js, "ev.0", 1, 401, 50)
	var late fakeOut
	drain(t, r, &late, 0)
	checkSeqs(t, "StopAtEnd with later messages", late.seqs(), seqRange(391, 401))

	// A filtered reader whose next matching message is published after
	// Open stops before it (seq 452 > 451, the last sequence at Open).
	r = open(t, natsio.NewSource(natsio.SourceOptions{URL: url, Stream: "EV", StopAtEnd: true, Subjects: []string{"ev.1"}}), 0, 1)
	defer r.Close()
	publish(t, js, "ev.1", 1, 451, 20)
	var filtered fakeOut
	drain(t, r, &filtered, 0)
	checkSeqs(t, "filtered StopAtEnd with later matching messages", filtered.seqs(), ev1)
}

// TestSourceTimestamp: Options.Timestamp replaces the publish time; a
// message it rejects is still emitted, with etime.MinTime.
func TestSourceTimestamp(t *testing.T) {
	s := runServer(t, t.TempDir(), -1)
	js := connect(t, s.ClientURL())
	createStream(t, js, "TS", "ts")
	publish(t, js, "ts", 1, 0, 100)
	src := natsio.NewSource(natsio.SourceOptions{URL: s.ClientURL(), Stream: "TS", StopAtEnd: true,
		Timestamp: func(m natsio.Message) (etime.Time, bool) {
			var v struct{ I int }
			if json.Unmarshal(m.Data, &v) != nil || v.I%10 == 0 {
				return 0, false
			}
			return etime.Time(1767225600000 + v.I), true
		}})
	r := open(t, src, 0, 1)
	defer r.Close()
	var out fakeOut
	drain(t, r, &out, 0)
	if len(out.recs) != 100 {
		t.Fatalf("%d records", len(out.recs))
	}
	for i, r := range out.recs {
		want := etime.Time(1767225600000 + i)
		if i%10 == 0 {
			want = etime.MinTime
		}
		if r.ts != want {
			t.Fatalf("record %d: timestamp %v, want %v", i, r.ts, want)
		}
		if d := time.Since(r.m.Published.Wall()); d < 0 || d > time.Hour {
			t.Fatalf("record %d: publish time %v, not about now", i, r.m.Published)
		}
	}
}

// TestSourceLive: without StopAtEnd the reader never ends: an empty Read
// returns Waiting after about FetchWait, new messages are read as they
// come, also across a restart of the server under the open reader, with
// no gap or duplicate. Headers reach the record.
func TestSourceLive(t *testing.T) {
	dir := t.TempDir()
	s := runServer(t, dir, -1)
	port := serverPort(s)
	url := s.ClientURL()
	js := connect(t, url)
	createStream(t, js, "LIVE", "live")
	publish(t, js, "live", 1, 0, 500)
	src := natsio.NewSource(natsio.SourceOptions{URL: url, Stream: "LIVE", FetchWait: 50 * time.Millisecond,
		ConnectOptions: []nats.Option{nats.ReconnectWait(50 * time.Millisecond), nats.MaxReconnects(-1)}})
	r := open(t, src, 0, 1)
	defer r.Close()
	var out fakeOut
	drain(t, r, &out, 500)
	for range 3 {
		start := time.Now()
		st, err := r.Read(context.Background(), &out)
		if err != nil || st != weir.Waiting {
			t.Fatalf("caught up: Read = %v, %v; want Waiting", st, err)
		}
		if d := time.Since(start); d < 40*time.Millisecond || d > 2*time.Second {
			t.Fatalf("an empty Read took %v with FetchWait 50ms", d)
		}
	}
	m := nats.NewMsg("live")
	m.Data = payload(500)
	m.Header.Set("Trace", "t-500")
	if _, err := js.PublishMsg(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	publish(t, js, "live", 1, 501, 499)
	drain(t, r, &out, 1000)
	if h := out.recs[500].m.Headers; h.Get("Trace") != "t-500" {
		t.Fatalf("headers %v", h)
	}
	if out.recs[499].m.Headers != nil {
		t.Fatalf("headers of a message without: %v", out.recs[499].m.Headers)
	}

	// Restart the server under the open reader.
	s.Shutdown()
	s.WaitForShutdown()
	for range 3 {
		if st, err := r.Read(context.Background(), &out); err != nil || st != weir.Waiting {
			t.Fatalf("server down: Read = %v, %v; want Waiting", st, err)
		}
	}
	runServer(t, dir, port)
	js2 := connect(t, url)
	publish(t, js2, "live", 1, 1000, 1000)
	drain(t, r, &out, 2000)
	checkSeqs(t, "across the restart", out.seqs(), seqRange(1, 2000))
	checkPayloads(t, out.recs, 0)
}

// TestSourceReach: a reader whose server goes away says so (Reach fails
// from the disconnection) and reaches it again once the client
// reconnects, so that the runner can warn of an outage that reads as a
// quiet stream otherwise.
func TestSourceReach(t *testing.T) {
	dir := t.TempDir()
	s := runServer(t, dir, -1)
	port := serverPort(s)
	url := s.ClientURL()
	createStream(t, connect(t, url), "REACH", "reach")
	reach := new(connector.Reach)
	src := natsio.NewSource(natsio.SourceOptions{URL: url, Stream: "REACH", FetchWait: 20 * time.Millisecond, Reach: reach,
		ConnectOptions: []nats.Option{nats.ReconnectWait(50 * time.Millisecond), nats.MaxReconnects(-1)}})
	r := open(t, src, 0, 1)
	defer r.Close()
	var out fakeOut
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); {
			if time.Now().After(deadline) {
				t.Fatalf("no %s in 10s", what)
			}
			if _, err := r.Read(context.Background(), &out); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := r.Read(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	if since, _ := reach.Failing(); !since.IsZero() {
		t.Fatalf("failing since %v with the server up", since)
	}
	s.Shutdown()
	s.WaitForShutdown()
	waitFor("failure", func() bool { since, _ := reach.Failing(); return !since.IsZero() })
	runServer(t, dir, port)
	waitFor("recovery", func() bool { since, _ := reach.Failing(); return since.IsZero() })
	// The reader's own Close is no outage.
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if since, err := reach.Failing(); !since.IsZero() {
		t.Fatalf("failing since %v after the reader closed: %v", since, err)
	}
}

// TestSourceIdleChannels: channels other than 0 emit nothing, mark
// themselves idle and wait (or end at once with StopAtEnd), and connect to
// nothing (a bad URL does not matter to them).
func TestSourceIdleChannels(t *testing.T) {
	src := natsio.NewSource(natsio.SourceOptions{URL: "nats://127.0.0.1:1", Stream: "S"})
	r := open(t, src, 2, 3)
	var out fakeOut
	for range 3 {
		if st, err := r.Read(context.Background(), &out); err != nil || st != weir.Waiting {
			t.Fatalf("idle Read = %v, %v", st, err)
		}
	}
	if len(out.recs) != 0 || out.idle != 1 {
		t.Fatalf("idle channel emitted %d records, marked idle %d times", len(out.recs), out.idle)
	}
	if pos, _ := r.(weir.CheckpointedReader).SnapshotPosition(); string(pos) != "natsio1:S:-" {
		t.Fatalf("idle position %q", pos)
	}
	r.Close()
	r = open(t, natsio.NewSource(natsio.SourceOptions{URL: "nats://127.0.0.1:1", Stream: "S", StopAtEnd: true}), 1, 2)
	if st, err := r.Read(context.Background(), &out); err != nil || st != weir.Done {
		t.Fatalf("idle Read with StopAtEnd = %v, %v", st, err)
	}
	if _, err := src.Open(context.Background(), 0, 3); err == nil {
		t.Fatal("channel 0 opened with an unreachable server")
	}
	if _, err := src.Open(context.Background(), 3, 3); err == nil {
		t.Fatal("channel 3 of 3 opened")
	}
}

// TestSourceOpenErrors: a missing stream, a missing stream name and a
// work-queue stream are refused by Open with a clear error.
func TestSourceOpenErrors(t *testing.T) {
	s := runServer(t, t.TempDir(), -1)
	js := connect(t, s.ClientURL())
	if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "WQ", Subjects: []string{"wq"}, Retention: jetstream.WorkQueuePolicy}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		stream, want string
	}{{"NOPE", `stream "NOPE"`}, {"", "Stream is empty"}, {"WQ", "work-queue"}} {
		_, err := natsio.NewSource(natsio.SourceOptions{URL: s.ClientURL(), Stream: c.stream}).Open(context.Background(), 0, 1)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("stream %q: error %v, want one mentioning %s", c.stream, err, c.want)
		}
	}
}

// TestSourceStreamDeleted: a stream deleted under a reader fails Read
// (after the ordered consumer's attempts to recreate itself).
func TestSourceStreamDeleted(t *testing.T) {
	s := runServer(t, t.TempDir(), -1)
	js := connect(t, s.ClientURL())
	createStream(t, js, "GONE", "gone")
	publish(t, js, "gone", 1, 0, 10)
	r := open(t, natsio.NewSource(natsio.SourceOptions{URL: s.ClientURL(), Stream: "GONE", ResetAttempts: 2}), 0, 1)
	defer r.Close()
	var out fakeOut
	drain(t, r, &out, 10)
	if err := js.DeleteStream(t.Context(), "GONE"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for time.Since(start) < time.Minute {
		st, err := r.Read(context.Background(), &out)
		if err != nil {
			if !strings.Contains(err.Error(), "GONE") {
				t.Fatalf("error does not name the stream: %v", err)
			}
			t.Logf("Read failed after %v as it should: %v", time.Since(start).Round(time.Millisecond), err)
			return
		}
		if st != weir.Waiting {
			t.Fatalf("status %v", st)
		}
	}
	t.Fatal("Read did not fail after the stream was deleted")
}

// ------------------------------------------------------------------ sink

func storedMessages(t testing.TB, url, stream string) []natsio.Message {
	t.Helper()
	r := open(t, natsio.NewSource(natsio.SourceOptions{URL: url, Stream: stream, StopAtEnd: true}), 0, 1)
	defer r.Close()
	var out fakeOut
	drain(t, r, &out, 0)
	ms := make([]natsio.Message, len(out.recs))
	for i, r := range out.recs {
		ms[i] = r.m
	}
	return ms
}

// TestSinkDedup publishes 1000 messages with ids, then replays them (the
// same ids again) with 200 new ones: the stream holds each message once,
// with its data and headers, and the sink counts the duplicates.
func TestSinkDedup(t *testing.T) {
	s := runServer(t, t.TempDir(), -1)
	url := s.ClientURL()
	js := connect(t, url)
	createStream(t, js, "OUT", "out.>")
	noLeaks(t)
	ctx := t.Context()
	sink, err := natsio.OpenSink(ctx, natsio.SinkOptions{URL: url, Subject: "out.results", MaxPending: 100})
	if err != nil {
		t.Fatal(err)
	}
	pub := func(from, to int) {
		for i := from; i < to; i++ {
			if err := sink.Publish("r-"+strconv.Itoa(i), "", payload(i), map[string]string{"Row": strconv.Itoa(i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	pub(0, 1000)
	if err := sink.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if st := sink.Stats(); st.Stored != 1000 || st.Duplicates != 0 {
		t.Fatalf("stats %+v", st)
	}
	pub(0, 1200) // a replay of everything, and more
	if err := sink.Publish("other-subject", "out.other", []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	if err := sink.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if st := sink.Stats(); st.Stored != 1201 || st.Duplicates != 1000 || st.Retried != 0 {
		t.Fatalf("stats %+v", st)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	ms := storedMessages(t, url, "OUT")
	if len(ms) != 1201 {
		t.Fatalf("stream holds %d messages, want 1201", len(ms))
	}
	for i, m := range ms[:1200] {
		if m.Subject != "out.results" || string(m.Data) != string(payload(i)) ||
			m.Headers.Get("Row") != strconv.Itoa(i) || m.Headers.Get(jetstream.MsgIDHeader) != "r-"+strconv.Itoa(i) {
			t.Fatalf("message %d: %s %s %v", i, m.Subject, m.Data, m.Headers)
		}
	}
	if m := ms[1200]; m.Subject != "out.other" || string(m.Data) != "x" {
		t.Fatalf("last message %s %s", m.Subject, m.Data)
	}
	if err := sink.Publish("late", "", nil, nil); err == nil {
		t.Fatal("Publish after Close accepted")
	}
}

// TestSinkErrors: a subject no stream stores is refused by OpenSink;
// messages to such a subject make Flush fail (after retries) and are
// reported by Close; Publish needs a subject.
func TestSinkErrors(t *testing.T) {
	s := runServer(t, t.TempDir(), -1)
	url := s.ClientURL()
	js := connect(t, url)
	createStream(t, js, "OUT", "out")
	ctx := t.Context()
	if _, err := natsio.OpenSink(ctx, natsio.SinkOptions{URL: url, Subject: "nowhere"}); err == nil || !strings.Contains(err.Error(), `"nowhere"`) {
		t.Fatalf("OpenSink to a subject without a stream: %v", err)
	}
	if _, err := natsio.OpenSink(ctx, natsio.SinkOptions{URL: "nats://127.0.0.1:1"}); err == nil {
		t.Fatal("OpenSink to an unreachable server succeeded")
	}
	sink, err := natsio.OpenSink(ctx, natsio.SinkOptions{URL: url, AckTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Publish("a", "", []byte("x"), nil); err == nil {
		t.Fatal("Publish without a subject accepted")
	}
	if err := sink.Publish("a", "out", []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	if err := sink.Publish("b", "nowhere", []byte("y"), nil); err != nil {
		t.Fatal(err)
	}
	err = sink.Flush(ctx)
	if err == nil || !strings.Contains(err.Error(), `"nowhere"`) {
		t.Fatalf("Flush with an unstorable message: %v", err)
	}
	if st := sink.Stats(); st.Stored != 1 || st.Retried != 3 {
		t.Fatalf("stats %+v", st)
	}
	if err := sink.Close(); err == nil || !strings.Contains(err.Error(), "1 messages") {
		t.Fatalf("Close with a failed message: %v", err)
	}
}

// TestSinkServerRestart: messages in flight when the server stops are
// published again by Flush once it is back, and stored exactly once.
func TestSinkServerRestart(t *testing.T) {
	dir := t.TempDir()
	s := runServer(t, dir, -1)
	port := serverPort(s)
	url := s.ClientURL()
	js := connect(t, url)
	createStream(t, js, "OUT", "out")
	ctx := t.Context()
	sink, err := natsio.OpenSink(ctx, natsio.SinkOptions{URL: url, Subject: "out", AckTimeout: 2 * time.Second,
		ConnectOptions: []nats.Option{nats.ReconnectWait(50 * time.Millisecond), nats.MaxReconnects(-1)}})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	const n = 3000
	for i := range n {
		if i == n/2 {
			s.Shutdown()
			s.WaitForShutdown()
			runServer(t, dir, port)
		}
		if err := sink.Publish("m-"+strconv.Itoa(i), "", payload(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := sink.Flush(fctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("stats %+v", sink.Stats())
	ms := storedMessages(t, url, "OUT")
	ids := map[string]int{}
	for _, m := range ms {
		ids[m.Headers.Get(jetstream.MsgIDHeader)]++
	}
	for i := range n {
		if c := ids["m-"+strconv.Itoa(i)]; c != 1 {
			t.Fatalf("message m-%d stored %d times", i, c)
		}
	}
	if len(ms) != n {
		t.Fatalf("%d messages stored, want %d", len(ms), n)
	}
}

// ------------------------------------------------------------ end to end

// memStore keeps committed checkpoints in memory; parts are named
// "stage/index/name".
type memStore struct {
	mu   sync.Mutex
	done map[int64]map[string][]byte
}

type memPending struct {
	s     *memStore
	id    int64
	mu    sync.Mutex
	parts map[string][]byte
}

func (s *memStore) Begin(id int64) (weir.PendingCheckpoint, error) {
	return &memPending{s: s, id: id, parts: map[string][]byte{}}, nil
}

func (s *memStore) latest() (int64, view, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var best int64 = -1
	for id := range s.done {
		best = max(best, id)
	}
	return best, view(s.done[best]), best >= 0
}

func (p *memPending) WritePart(name string, data []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.parts[name] = slices.Clone(data)
	return nil
}

func (p *memPending) Commit() error {
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	if p.s.done == nil {
		p.s.done = map[int64]map[string][]byte{}
	}
	p.s.done[p.id] = p.parts
	return nil
}

func (p *memPending) Abort() error { return nil }

type view map[string][]byte

func (v view) Parts(stage, name string) map[int][]byte {
	out := map[int][]byte{}
	for k, b := range v {
		rest, ok := strings.CutPrefix(k, stage+"/")
		if !ok {
			continue
		}
		idx, part, ok := strings.Cut(rest, "/")
		i, err := strconv.Atoi(idx)
		if ok && err == nil && part == name {
			out[i] = b
		}
	}
	return out
}

// TestEndToEndExactlyOnce runs NATS -> weir -> NATS with checkpoints,
// the sink flushed in each checkpoint's pre-commit. The first run crashes
// after a checkpoint, with output published past it; the second run
// restores the checkpoint and replays: the output stream holds every input
// message exactly once, and the replay did publish duplicates (which the
// stream dropped).
func TestEndToEndExactlyOnce(t *testing.T) {
	const n = 5000
	s := runServer(t, t.TempDir(), -1)
	url := s.ClientURL()
	js := connect(t, url)
	createStream(t, js, "IN", "in")
	createStream(t, js, "OUT", "out")
	publish(t, js, "in", 1, 0, n)
	store := &memStore{}
	srcOpts := natsio.SourceOptions{URL: url, Stream: "IN", StopAtEnd: true, FetchBatch: 50}

	run := func(restore weir.CheckpointView, nextID int64, crash bool) (natsio.SinkStats, error) {
		ctx, cancel := context.WithCancelCause(t.Context())
		defer cancel(nil)
		sink, err := natsio.OpenSink(ctx, natsio.SinkOptions{URL: url, Subject: "out"})
		if err != nil {
			t.Fatal(err)
		}
		var completed atomic.Int64
		opts := weir.DefaultOptions()
		opts.Checkpoint = weir.CheckpointOptions{Interval: 2 * time.Millisecond, Store: store, Restore: restore, NextID: nextID,
			OnComplete: func(int64) { completed.Add(1) }}
		env, err := weir.NewEnv(opts)
		if err != nil {
			t.Fatal(err)
		}
		env.OnPreCommit(func(int64, func(string, []byte) error) error {
			fctx, fcancel := context.WithTimeout(ctx, 30*time.Second)
			defer fcancel()
			return sink.Flush(fctx)
		})
		in := weir.FromSource(env, "nats", natsio.NewSource(srcOpts), weir.SourceOptions{})
		crashed := false
		weir.ForEachSerial(in, func(_ etime.Time, m natsio.Message) {
			if crashed {
				return // the process is gone
			}
			if err := sink.Publish("in-"+strconv.FormatUint(m.Sequence, 10), "", m.Data, nil); err != nil {
				cancel(err)
			}
			if m.Sequence%50 == 0 {
				time.Sleep(time.Millisecond) // let checkpoints happen
			}
			if crash && m.Sequence >= n/3 && completed.Load() >= 2 {
				// Output past the checkpoint reached the stream, then the
				// process dies before the next checkpoint.
				fctx, fcancel := context.WithTimeout(ctx, 30*time.Second)
				defer fcancel()
				if err := sink.Flush(fctx); err != nil {
					cancel(err)
				}
				crashed = true
				cancel(errors.New("crash"))
			}
		})
		_, err = env.Execute(ctx)
		if err == nil {
			fctx, fcancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer fcancel()
			err = sink.Flush(fctx) // the last epoch: no checkpoint after the end
		}
		st := sink.Stats()
		sink.Close()
		return st, err
	}

	st1, err := run(nil, 0, true)
	if err == nil || !strings.Contains(err.Error(), "crash") {
		t.Fatalf("first run: %v, want the crash", err)
	}
	id, v, ok := store.latest()
	if !ok {
		t.Fatal("no checkpoint before the crash")
	}
	st2, err := run(v, id+1, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("restored checkpoint %d; run 1 %+v, run 2 %+v", id, st1, st2)
	if st2.Duplicates == 0 {
		t.Fatal("the replay published no duplicate: the test proves nothing")
	}
	ms := storedMessages(t, url, "OUT")
	if len(ms) != n {
		t.Fatalf("output holds %d messages, want %d", len(ms), n)
	}
	seen := map[string]bool{}
	for _, m := range ms {
		seen[m.Headers.Get(jetstream.MsgIDHeader)] = true
	}
	for seq := 1; seq <= n; seq++ {
		if !seen["in-"+strconv.Itoa(seq)] {
			t.Fatalf("input %d missing from the output", seq)
		}
	}
	checkPayloads(t, func() []rec {
		var rs []rec
		for _, m := range ms {
			rs = append(rs, rec{m: m})
		}
		return rs
	}(), 0)
}

// ------------------------------------------------------------ real server

// realServer returns the URL of the NATS server of this machine (env
// WEIR_NATS_URL, default nats://127.0.0.1:4222). testenv.NATS skips the
// test when it is unreachable or has no JetStream, and fails it then when
// WEIR_REQUIRE_SERVICES=1.
func realServer(t *testing.T) string {
	t.Helper()
	return testenv.NATS(t)
}

// TestRealServerRoundTrip publishes through the sink to a fresh stream on
// the real server, replays half of it, and reads it back through a weir
// job; the stream is deleted at cleanup.
func TestRealServerRoundTrip(t *testing.T) {
	url := realServer(t)
	js := connect(t, url)
	name := fmt.Sprintf("WEIR_NATSIO_TEST_%d_%d", os.Getpid(), time.Now().UnixNano())
	subject := "weir.natsio.test." + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: name, Subjects: []string{subject}, Storage: jetstream.MemoryStorage, Duplicates: time.Minute}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := js.DeleteStream(ctx, name); err != nil {
			t.Errorf("delete stream %s: %v", name, err)
		}
	})
	const n = 1000
	sink, err := natsio.OpenSink(t.Context(), natsio.SinkOptions{URL: url, Subject: subject})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n + n/2 {
		k := i % n // the second half replays the first 500
		if err := sink.Publish("m-"+strconv.Itoa(k), "", payload(k), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := sink.Stats(); st.Stored != n || st.Duplicates != n/2 {
		t.Fatalf("sink stats %+v", st)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	env, err := weir.NewEnv(weir.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	got := weir.Collect(weir.FromSource(env, "nats", natsio.NewSource(natsio.SourceOptions{URL: url, Stream: name, StopAtEnd: true}), weir.SourceOptions{}))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, err := env.Execute(ctx); err != nil {
		t.Fatal(err)
	}
	items := got.Items()
	if len(items) != n {
		t.Fatalf("read %d messages, want %d", len(items), n)
	}
	for i, m := range items {
		if m.Sequence != uint64(i+1) || string(m.Data) != string(payload(i)) || m.Published == etime.MinTime {
			t.Fatalf("message %d: seq %d data %s published %v", i, m.Sequence, m.Data, m.Published)
		}
	}
}

// -------------------------------------------------------------- benchmark

// BenchmarkSourceRead reads a stream of 50,000 messages of ~50 bytes from
// the embedded server with one reader, as a job's source channel does,
// and reports messages per second.
func BenchmarkSourceRead(b *testing.B) {
	const n = 50000
	s := runServer(b, b.TempDir(), -1)
	js := connect(b, s.ClientURL())
	createStream(b, js, "BENCH", "bench")
	publish(b, js, "bench", 1, 0, n)
	src := natsio.NewSource(natsio.SourceOptions{URL: s.ClientURL(), Stream: "BENCH", StopAtEnd: true})
	var total int
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		r, err := src.Open(context.Background(), 0, 1)
		if err != nil {
			b.Fatal(err)
		}
		out := countOut{}
		for {
			st, err := r.Read(context.Background(), &out)
			if err != nil {
				b.Fatal(err)
			}
			if st == weir.Done {
				break
			}
		}
		r.Close()
		if out.n != n {
			b.Fatalf("read %d messages, want %d", out.n, n)
		}
		total += out.n
	}
	b.ReportMetric(float64(total)/time.Since(start).Seconds(), "msgs/s")
}

type countOut struct{ n int }

func (o *countOut) Emit(etime.Time, natsio.Message) { o.n++ }
func (o *countOut) EmitWatermark(etime.Time)        {}
func (o *countOut) MarkIdle()                       {}
func (o *countOut) MarkActive()                     {}

// TestSourceBacklog (W10): the reader reports a backlog while the stream
// holds messages it has not emitted, and none once it is caught up with a
// live stream, although its reads of new messages return Emitted.
func TestSourceBacklog(t *testing.T) {
	s := runServer(t, t.TempDir(), -1)
	js := connect(t, s.ClientURL())
	createStream(t, js, "ORDERS", "orders.>")
	publish(t, js, "orders.u%d", 7, 0, 3000)
	r := open(t, natsio.NewSource(natsio.SourceOptions{URL: s.ClientURL(), Stream: "ORDERS", FetchBatch: 100}), 0, 1)
	defer r.Close()
	br, ok := r.(weir.BacklogReporter)
	if !ok {
		t.Fatalf("reader %T is not a weir.BacklogReporter", r)
	}
	out := &fakeOut{}
	drain(t, r, out, 100)
	if !br.Backlog() {
		t.Fatalf("after %d of 3000 messages: no backlog reported", len(out.recs))
	}
	drain(t, r, out, 3000)
	if br.Backlog() {
		t.Fatal("caught up with the stream, yet a backlog is reported")
	}
	publish(t, js, "orders.u%d", 7, 3000, 1)
	if st := drain(t, r, out, 3001); st != weir.Emitted || br.Backlog() {
		t.Fatalf("a live message: status %v backlog %v, want Emitted and no backlog", st, br.Backlog())
	}
}
