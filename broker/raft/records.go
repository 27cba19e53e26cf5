package raft

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/log"
)

// Control record types (Kafka's ControlRecordType): the key of a control
// record is (version int16 = 0, type int16).
const (
	ControlLeaderChange   int16 = 2
	ControlSnapshotHeader int16 = 3
	ControlSnapshotFooter int16 = 4
)

// Batch is one batch of the metadata log or of a snapshot (Kafka's raft
// Batch). Records are the record values, opaque to the quorum; the slices
// are the listener's to keep.
type Batch struct {
	BaseOffset int64
	LastOffset int64
	Epoch      int32
	// AppendTimestamp is the leader's clock (ms) when it built the batch.
	AppendTimestamp int64
	SizeInBytes     int
	// Control marks a control batch (LeaderChangeMessage); it carries no
	// Records. Listeners see it so that they see every offset commit.
	Control bool
	Records [][]byte

	// voters is the VotersRecord of a control batch, if it holds one.
	voters VoterSet
}

// buildDataBatch frames records as one uncompressed magic-v2 batch, each
// record a null key and the given value, all stamped appendTime. Its base
// offset is set when the batch is written (raft index = offset).
func buildDataBatch(epoch int32, appendTime int64, records [][]byte) ([]byte, error) {
	b := log.NewBatchBuilder(0)
	b.PartitionLeaderEpoch = epoch
	for _, r := range records {
		b.Add(appendTime, nil, r)
	}
	return b.Build(nil)
}

// controlKey is a control record's key: version 0 and the type.
func controlKey(typ int16) []byte {
	return []byte{0, 0, byte(uint16(typ) >> 8), byte(typ)}
}

// buildControlBatch returns a control batch of one record of type typ
// (not transactional, no producer), as KRaft writes its control records.
func buildControlBatch(offset int64, epoch int32, ts int64, typ int16, value []byte) []byte {
	b := log.NewBatchBuilder(offset)
	b.PartitionLeaderEpoch = epoch
	b.Control = true
	b.Add(ts, controlKey(typ), value)
	out, _ := b.Build(nil) // uncompressed: cannot fail
	return out
}

// controlRecord is one record of a control batch.
type controlRecord struct {
	typ   int16
	value []byte
}

// buildControlBatchOf returns a control batch of the records, in order.
func buildControlBatchOf(offset int64, epoch int32, ts int64, recs ...controlRecord) []byte {
	b := log.NewBatchBuilder(offset)
	b.PartitionLeaderEpoch = epoch
	b.Control = true
	for _, r := range recs {
		b.Add(ts, controlKey(r.typ), r.value)
	}
	out, _ := b.Build(nil) // uncompressed: cannot fail
	return out
}

// leaderChangeValue is a LeaderChangeMessage v0 (flexible).
func leaderChangeValue(leader int32, voters []int32) []byte {
	m := kmsg.NewLeaderChangeMessage()
	m.Version = 0
	m.LeaderID = leader
	for _, v := range voters {
		lv := kmsg.NewLeaderChangeMessageVoter()
		lv.VoterID = v
		m.Voters = append(m.Voters, lv)
	}
	return m.AppendTo(nil)
}

// Tagged fields Moldau adds to the SnapshotHeaderRecord (flexible: Kafka
// readers skip unknown tags). A snapshot must say which raft index it ends
// at, because raft indices count batches and offsets count records (see
// doc.go); the end offset is in the file name too, but a snapshot sent to a
// follower travels without its name.
const (
	tagLastContainedRaftIndex = 10000
	tagEndOffset              = 10001
)

// snapshotHeader is a SnapshotHeaderRecord v0 with Moldau's tagged fields.
type snapshotHeader struct {
	LastContainedLogTimestamp int64
	LastContainedRaftIndex    uint64
	EndOffset                 int64
}

func (h snapshotHeader) value() []byte {
	v := make([]byte, 2, 32)
	v = binary.BigEndian.AppendUint64(v, uint64(h.LastContainedLogTimestamp))
	v = binary.AppendUvarint(v, 2)
	v = binary.AppendUvarint(v, tagLastContainedRaftIndex)
	v = binary.AppendUvarint(v, 8)
	v = binary.BigEndian.AppendUint64(v, h.LastContainedRaftIndex)
	v = binary.AppendUvarint(v, tagEndOffset)
	v = binary.AppendUvarint(v, 8)
	return binary.BigEndian.AppendUint64(v, uint64(h.EndOffset))
}

func parseSnapshotHeader(v []byte) (snapshotHeader, error) {
	var h snapshotHeader
	bad := fmt.Errorf("raft: malformed SnapshotHeaderRecord (%d bytes)", len(v))
	if len(v) < 11 || binary.BigEndian.Uint16(v) != 0 {
		return h, bad
	}
	h.LastContainedLogTimestamp = int64(binary.BigEndian.Uint64(v[2:]))
	b := v[10:]
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return h, bad
	}
	b = b[k:]
	seen := 0
	for range n {
		tag, k1 := binary.Uvarint(b)
		if k1 <= 0 {
			return h, bad
		}
		size, k2 := binary.Uvarint(b[k1:])
		if k2 <= 0 || size > uint64(len(b)-k1-k2) {
			return h, bad
		}
		field := b[k1+k2 : k1+k2+int(size)]
		b = b[k1+k2+int(size):]
		switch {
		case tag == tagLastContainedRaftIndex && size == 8:
			h.LastContainedRaftIndex = binary.BigEndian.Uint64(field)
			seen++
		case tag == tagEndOffset && size == 8:
			h.EndOffset = int64(binary.BigEndian.Uint64(field))
			seen++
		}
	}
	if seen != 2 {
		return h, errors.New("raft: SnapshotHeaderRecord lacks the raft index and end offset")
	}
	return h, nil
}

// snapshotFooterValue is a SnapshotFooterRecord v0.
func snapshotFooterValue() []byte { return []byte{0, 0, 0} }

// controlType returns the type of a control record key.
func controlType(key []byte) (int16, error) {
	if len(key) < 4 {
		return 0, fmt.Errorf("raft: control record key of %d bytes", len(key))
	}
	return int16(binary.BigEndian.Uint16(key[2:])), nil
}

// maxDecompressedBatch bounds a compressed batch's expansion when read.
const maxDecompressedBatch = 256 << 20

// decodeBatch parses one whole batch (CRC-checked) into a Batch. For a
// control batch it also returns the first record's control type.
func decodeBatch(b []byte) (Batch, int16, error) {
	h, err := log.CheckBatch(b)
	if err != nil {
		return Batch{}, 0, err
	}
	out := Batch{
		BaseOffset: h.BaseOffset, LastOffset: h.LastOffset(), Epoch: h.PartitionLeaderEpoch,
		AppendTimestamp: h.MaxTimestamp, SizeInBytes: len(b), Control: h.IsControl(),
	}
	recs := b[log.BatchHeaderSize:]
	if h.Codec() != log.CodecNone {
		if recs, err = log.Decompress(nil, h.Codec(), recs, maxDecompressedBatch); err != nil {
			return Batch{}, 0, err
		}
	}
	it := log.NewRecordIter(recs)
	var r log.Record
	var ctype int16 = -1
	for {
		ok, err := it.Next(&r)
		if err != nil {
			return Batch{}, 0, err
		}
		if !ok {
			break
		}
		if out.Control {
			t, err := controlType(r.Key)
			if err != nil {
				return Batch{}, 0, err
			}
			if ctype < 0 {
				ctype = t
				if ctype == ControlSnapshotHeader || ctype == ControlSnapshotFooter {
					out.Records = append(out.Records, r.Value)
				}
			}
			if t == ControlVoters {
				if out.voters, err = parseVoters(r.Value); err != nil {
					return Batch{}, 0, err
				}
			}
			continue
		}
		out.Records = append(out.Records, r.Value)
	}
	return out, ctype, nil
}

// splitBatches calls fn with each whole batch of b, in order; a trailing
// partial batch is returned as rest.
func splitBatches(b []byte, fn func(batch []byte, h log.BatchHeader) error) (rest []byte, err error) {
	for len(b) >= log.BatchHeaderSize {
		h, err := log.ParseBatchHeader(b)
		if err != nil {
			return b, err
		}
		n := h.TotalSize()
		if n > len(b) {
			break
		}
		if err := fn(b[:n], h); err != nil {
			return b, err
		}
		b = b[n:]
	}
	return b, nil
}
