package group

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/etime"
)

// A task's changelog partition (the task's partition number of the
// changelog topic) holds, per transaction of its owner, the task's
// checkpoint: chunk records (key "c/<i>") and then a header record (key
// "h"). Compaction keeps the newest of each key; a header names its
// checkpoint id and chunk count, and each chunk starts with the id, so a
// restore takes the header of the id the group's committed offset names
// (its metadata) and that id's chunks, read before it.

const (
	headerKey   = "h"
	chunkPrefix = "c/"
	// chunkSize keeps each record well under the brokers' default
	// message.max.bytes (1 MiB).
	chunkSize = 256 << 10
	// metaPrefix starts the metadata of the member's offset commits
	// (taskMeta): "weir <checkpoint id> at=<offset> wm=<ms>[ done]".
	metaPrefix = "weir "
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// snapshot is one committed checkpoint of a task.
type snapshot struct {
	ID    int64
	Meta  []byte            // the spec's fingerprint (job.Fingerprint)
	Parts map[string][]byte // the checkpoint's parts by name
	// Done: the task read its input to the end (stop_at_end) and
	// committed its last output; it is not run again.
	Done bool
	// Position is the task's next input offset; Watermark its
	// partition's watermark, Idle whether the partition was idle (not
	// stored in the changelog header: they go in the offset's metadata).
	Position  int64
	Watermark etime.Time
	Idle      bool
}

// encodeParts frames the parts, sorted by name.
func encodeParts(parts map[string][]byte) []byte {
	var b []byte
	for _, name := range slices.Sorted(maps.Keys(parts)) {
		b = binary.AppendUvarint(b, uint64(len(name)))
		b = append(b, name...)
		b = binary.AppendUvarint(b, uint64(len(parts[name])))
		b = append(b, parts[name]...)
	}
	return b
}

func decodeParts(b []byte) (map[string][]byte, error) {
	parts := map[string][]byte{}
	next := func() ([]byte, error) {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return nil, errors.New("truncated parts")
		}
		v := b[k : k+int(n)]
		b = b[k+int(n):]
		return v, nil
	}
	for len(b) > 0 {
		name, err := next()
		if err != nil {
			return nil, err
		}
		data, err := next()
		if err != nil {
			return nil, err
		}
		parts[string(name)] = data
	}
	return parts, nil
}

// header is a header record's value: id, chunks, CRC-32C of the parts,
// done, position, meta.
func appendHeader(b []byte, s *snapshot, chunks int, crc uint32) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(s.ID))
	b = binary.BigEndian.AppendUint32(b, uint32(chunks))
	b = binary.BigEndian.AppendUint32(b, crc)
	done := byte(0)
	if s.Done {
		done = 1
	}
	b = append(b, done)
	b = binary.BigEndian.AppendUint64(b, uint64(s.Position))
	return append(b, s.Meta...)
}

type header struct {
	id       int64
	chunks   int
	crc      uint32
	done     bool
	position int64
	meta     []byte
}

func parseHeader(v []byte) (header, error) {
	if len(v) < 25 {
		return header{}, errors.New("short changelog header")
	}
	return header{id: int64(binary.BigEndian.Uint64(v)), chunks: int(binary.BigEndian.Uint32(v[8:])), crc: binary.BigEndian.Uint32(v[12:]),
		done: v[16] == 1, position: int64(binary.BigEndian.Uint64(v[17:])), meta: bytes.Clone(v[25:])}, nil
}

// changelogRecords are the records of snapshot s of the task whose
// changelog partition is p.
func changelogRecords(topic string, p int32, s *snapshot) []*kgo.Record {
	data := encodeParts(s.Parts)
	var recs []*kgo.Record
	for i := 0; i == 0 || i*chunkSize < len(data); i++ {
		chunk := data[i*chunkSize : min(len(data), (i+1)*chunkSize)]
		v := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(chunk)), uint64(s.ID))
		recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: []byte(chunkPrefix + strconv.Itoa(i)), Value: append(v, chunk...)})
	}
	h := appendHeader(nil, s, len(recs), crc32.Checksum(data, castagnoli))
	return append(recs, &kgo.Record{Topic: topic, Partition: p, Key: []byte(headerKey), Value: h})
}

// taskMeta is what a task's offset commit says in its metadata:
// "weir <id> at=<offset> wm=<ms>[ done]".
type taskMeta struct {
	// ID is the task's checkpoint committed with the offset; Done: the
	// task read its input to the end.
	ID   int64
	Done bool
	// At is the changelog offset of the checkpoint's first record (-1:
	// unknown, as in metadata of an older weir): a restore reads from
	// there.
	At int64
	// Watermark is the task's watermark at the checkpoint (MinTime: none
	// yet): any member reads the group's watermarks from the offsets.
	// Idle: its partition was idle then (the group's alignment leaves
	// it out).
	Watermark etime.Time
	Idle      bool
}

func (t taskMeta) String() string {
	m := metaPrefix + strconv.FormatInt(t.ID, 10)
	if t.At >= 0 {
		m += " at=" + strconv.FormatInt(t.At, 10)
	}
	if t.Watermark != etime.MinTime {
		m += " wm=" + strconv.FormatInt(int64(t.Watermark), 10)
	}
	if t.Idle {
		m += " idle"
	}
	if t.Done {
		m += " done"
	}
	return m
}

// parseMeta reads taskMeta's text; ok is false for metadata weir did not
// write.
func parseMeta(m string) (t taskMeta, ok bool) {
	rest, ok := strings.CutPrefix(m, metaPrefix)
	if !ok {
		return t, false
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return t, false
	}
	t = taskMeta{At: -1, Watermark: etime.MinTime}
	var err error
	if t.ID, err = strconv.ParseInt(fields[0], 10, 64); err != nil {
		return t, false
	}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "done":
			t.Done = true
		case "idle":
			t.Idle = true
		case "at":
			t.At, err = strconv.ParseInt(v, 10, 64)
		case "wm":
			var ms int64
			ms, err = strconv.ParseInt(v, 10, 64)
			t.Watermark = etime.Time(ms)
		}
		if err != nil {
			return t, false
		}
	}
	return t, true
}

// readStats tell what a restore read: from the changelog offset from
// (-1: from the state directory), records records of bytes bytes.
type readStats struct {
	from    int64
	records int
	bytes   int64
	// cached is the checkpoint id of the state directory's copy when a
	// restore read the changelog instead (0: none).
	cached int64
}

// readSnapshot reads changelog partition p of topic from offset from
// (read_committed) until it has the header of checkpoint id and its
// chunks, and returns the snapshot. The group's committed offset names id
// and commits with it, so the header is there once the offset is stable;
// wait bounds the search.
func readSnapshot(ctx context.Context, opts []kgo.Opt, topic string, p int32, from int64, id int64, wait time.Duration) (*snapshot, int64, readStats, error) {
	st := readStats{from: from}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	cl, err := kgo.NewClient(append(slices.Clone(opts),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(from)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))...)
	if err != nil {
		return nil, 0, st, err
	}
	defer cl.Close()
	chunks := map[int][]byte{}
	// What the search saw, for its error: the partition's end and last
	// stable offset in the last fetch, and the checkpoint ids of the
	// headers read.
	hwm, lso := int64(-1), int64(-1)
	var ids []int64
	for {
		f := cl.PollFetches(ctx)
		f.EachPartition(func(fp kgo.FetchTopicPartition) {
			if fp.Err == nil {
				hwm, lso = fp.HighWatermark, fp.LastStableOffset
			}
		})
		if err := ctx.Err(); err != nil {
			if perr := parent.Err(); perr != nil {
				// A rebalance or a stop, not the wait: the caller tells.
				return nil, 0, st, fmt.Errorf("changelog %s partition %d: reading checkpoint %d interrupted: %w", topic, p, id, perr)
			}
			return nil, 0, st, fmt.Errorf("changelog %s partition %d: checkpoint %d not found from offset %d within %v (the group's offsets name it; read %d records, headers of checkpoints %v; the partition ends at %d, its last stable offset is %d)",
				topic, p, id, from, wait, st.records, ids, hwm, lso)
		}
		for _, fe := range f.Errors() {
			return nil, 0, st, fmt.Errorf("changelog %s partition %d: %w", topic, p, fe.Err)
		}
		var found *snapshot
		var at int64
		var ferr error
		f.EachRecord(func(r *kgo.Record) {
			if found != nil || ferr != nil {
				return
			}
			st.records++
			st.bytes += int64(len(r.Key) + len(r.Value))
			key := string(r.Key)
			if i, ok := strings.CutPrefix(key, chunkPrefix); ok {
				n, err := strconv.Atoi(i)
				if err == nil && len(r.Value) >= 8 && int64(binary.BigEndian.Uint64(r.Value)) == id {
					chunks[n] = bytes.Clone(r.Value[8:])
				}
				return
			}
			if key != headerKey {
				return
			}
			h, err := parseHeader(r.Value)
			if err == nil && h.id != id && len(ids) < 16 {
				ids = append(ids, h.id)
			}
			if err != nil || h.id != id {
				return
			}
			var data []byte
			for i := range h.chunks {
				c, ok := chunks[i]
				if !ok {
					ferr = fmt.Errorf("changelog %s partition %d: checkpoint %d lacks chunk %d", topic, p, id, i)
					return
				}
				data = append(data, c...)
			}
			if crc32.Checksum(data, castagnoli) != h.crc {
				ferr = fmt.Errorf("changelog %s partition %d: checkpoint %d fails its checksum", topic, p, id)
				return
			}
			parts, err := decodeParts(data)
			if err != nil {
				ferr = fmt.Errorf("changelog %s partition %d: checkpoint %d: %w", topic, p, id, err)
				return
			}
			found = &snapshot{ID: id, Meta: h.meta, Parts: parts, Done: h.done, Position: h.position}
			at = r.Offset
		})
		if ferr != nil {
			return nil, 0, st, ferr
		}
		if found != nil {
			return found, at, st, nil
		}
	}
}
