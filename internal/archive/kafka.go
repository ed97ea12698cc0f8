package archive

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/weirstream/weir/etime"
)

// A group's archive (weir run --instance) is a compacted Kafka topic
// instead of a directory: one record per window, whose key is KafkaKey
// and whose value is EncodeKafka's, written by the window's task in the
// transaction that publishes the revision (and by a backfill in the
// transaction that publishes its next one). Compaction keeps a key's
// newest record of its partition; a reader that finds a window in two
// partitions keeps the higher (run, pane), as Put does. A record without
// a value (a tombstone) removes a window beyond the horizon.

// KafkaRecord is a record of a group's archive topic: its partition, its
// key (KafkaKey) and its value (EncodeKafka; nil: a tombstone).
type KafkaRecord struct {
	Partition  int32
	Key, Value []byte
}

// kafkaFormat starts every record value, so that a change of the format
// is told from corruption.
const kafkaFormat = 1

// KafkaKey is the record key of a window of the result key key: the
// row key of the Pebble archive.
func KafkaKey(key string, start, end etime.Time) []byte {
	return windowKey(nil, prefixRow, key, start, end)
}

// ParseKafkaKey reads a KafkaKey.
func ParseKafkaKey(k []byte) (key string, start, end etime.Time, err error) {
	if len(k) < 17 || k[0] != prefixRow {
		return "", 0, 0, errors.New("archive: not a window's record key")
	}
	end = etime.Time(binary.BigEndian.Uint64(k[1:]) ^ 1<<63)
	start = etime.Time(binary.BigEndian.Uint64(k[9:]) ^ 1<<63)
	n, m := binary.Uvarint(k[17:])
	if m <= 0 || n != uint64(len(k)-17-m) {
		return "", 0, 0, errors.New("archive: a window's record key of the wrong length")
	}
	return string(k[17+m:]), start, end, nil
}

// EncodeKafka is a window's record value: its newest revision (run,
// pane and result bytes) and the ledger entry ids backfills applied to it.
func EncodeKafka(run, pane int64, value []byte, ids []string) []byte {
	b := binary.AppendUvarint(make([]byte, 0, len(value)+16), kafkaFormat)
	b = binary.AppendUvarint(b, uint64(run))
	b = binary.AppendUvarint(b, uint64(pane))
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = binary.AppendUvarint(b, uint64(len(id)))
		b = append(b, id...)
	}
	return append(b, value...)
}

// DecodeKafka reads EncodeKafka's value; value aliases v.
func DecodeKafka(v []byte) (run, pane int64, value []byte, ids []string, err error) {
	bad := errors.New("archive: a corrupt window record")
	var u [4]uint64
	for i := range u {
		x, n := binary.Uvarint(v)
		if n <= 0 || x > math.MaxInt64 {
			return 0, 0, nil, nil, bad
		}
		u[i], v = x, v[n:]
	}
	if u[0] != kafkaFormat {
		return 0, 0, nil, nil, errors.New("archive: a window record of another format (written by another weir version)")
	}
	if u[3] > uint64(len(v)) {
		return 0, 0, nil, nil, bad
	}
	ids = make([]string, 0, u[3])
	for range u[3] {
		n, m := binary.Uvarint(v)
		if m <= 0 || n > uint64(len(v)-m) {
			return 0, 0, nil, nil, bad
		}
		ids = append(ids, string(v[m:m+int(n)]))
		v = v[m+int(n):]
	}
	return int64(u[1]), int64(u[2]), v, ids, nil
}
