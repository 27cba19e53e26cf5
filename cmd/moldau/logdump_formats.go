package main

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
)

// Two Kafka file formats the broker does not write yet, decoded here from
// Kafka's definitions so log dump reads a Kafka log dir (and Moldau's once
// transactions and producer snapshots land). When the log package gains
// its own readers, the dump should use them; the golden files in
// testdata/ pin the format either way.

// Transaction index (.txnindex), Kafka's TransactionIndex/AbortedTxn: a
// sequence of 34-byte big-endian entries, one per aborted transaction
// whose abort marker is in the segment:
//
//	version           int16  0
//	producerId        int64
//	firstOffset       int64  the transaction's first offset
//	lastOffset        int64  the offset of its abort marker
//	lastStableOffset  int64  the LSO when it was aborted
const abortedTxnSize = 34

type abortedTxn struct {
	Version          int16 `json:"version"`
	ProducerID       int64 `json:"producer_id"`
	FirstOffset      int64 `json:"first_offset"`
	LastOffset       int64 `json:"last_offset"`
	LastStableOffset int64 `json:"last_stable_offset"`
}

// txnIndexProblem is a structure problem at a byte position of a file.
type txnIndexProblem struct {
	pos int64
	msg string
}

// decodeTxnIndex decodes a transaction index of the segment at base and
// checks it as Kafka's TransactionIndex does (known version, last offset
// not below the segment's base) plus whole entries and ordered offsets.
func decodeTxnIndex(b []byte, base int64) ([]abortedTxn, []txnIndexProblem) {
	var out []abortedTxn
	var probs []txnIndexProblem
	i := 0
	for ; i+abortedTxnSize <= len(b); i += abortedTxnSize {
		e := b[i:]
		t := abortedTxn{
			Version:          int16(binary.BigEndian.Uint16(e[0:])),
			ProducerID:       int64(binary.BigEndian.Uint64(e[2:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(e[10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(e[18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(e[26:])),
		}
		switch {
		case t.Version != 0:
			probs = append(probs, txnIndexProblem{int64(i), fmt.Sprintf("unknown aborted transaction version %d (only 0 exists)", t.Version)})
		case t.LastOffset < base:
			probs = append(probs, txnIndexProblem{int64(i), fmt.Sprintf("last offset %d is below the segment's base offset %d", t.LastOffset, base)})
		case t.FirstOffset > t.LastOffset:
			probs = append(probs, txnIndexProblem{int64(i), fmt.Sprintf("first offset %d is after last offset %d", t.FirstOffset, t.LastOffset)})
		case len(out) > 0 && t.LastOffset <= out[len(out)-1].LastOffset:
			probs = append(probs, txnIndexProblem{int64(i), fmt.Sprintf("last offset %d does not follow %d", t.LastOffset, out[len(out)-1].LastOffset)})
		}
		out = append(out, t)
	}
	if i < len(b) {
		probs = append(probs, txnIndexProblem{int64(i), fmt.Sprintf("%d trailing bytes are not a whole %d-byte entry", len(b)-i, abortedTxnSize)})
	}
	return out, probs
}

// Producer state snapshot (.snapshot, named by the offset it was taken
// at), Kafka's ProducerStateManager.writeSnapshot: the ProducerSnapshot
// message, version 1, big-endian and not flexible:
//
//	version          int16  1
//	crc              uint32 CRC-32C of everything after this field
//	count            int32  number of entries
//	entries, 46 bytes each:
//	  producerId             int64
//	  epoch                  int16
//	  lastSequence           int32
//	  lastOffset             int64
//	  offsetDelta            int32  lastSequence - firstSequence of the last batch
//	  timestamp              int64  max timestamp of the last batch
//	  coordinatorEpoch       int32
//	  currentTxnFirstOffset  int64  -1: no open transaction
const (
	producerSnapshotVersion   = 1
	producerSnapshotHeader    = 10 // version, crc, count
	producerSnapshotCRCOffset = 2
	producerSnapshotEntrySize = 46
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type producerSnapshotEntry struct {
	ProducerID            int64 `json:"producer_id"`
	Epoch                 int16 `json:"producer_epoch"`
	LastSequence          int32 `json:"last_sequence"`
	LastOffset            int64 `json:"last_offset"`
	OffsetDelta           int32 `json:"offset_delta"`
	Timestamp             int64 `json:"timestamp"`
	CoordinatorEpoch      int32 `json:"coordinator_epoch"`
	CurrentTxnFirstOffset int64 `json:"current_txn_first_offset"`
}

// firstSequence is the last batch's first sequence, wrapping as Kafka's
// DefaultRecordBatch.decrementSequence does.
func (e producerSnapshotEntry) firstSequence() int32 {
	if e.LastSequence < e.OffsetDelta {
		return math.MaxInt32 - (e.OffsetDelta - e.LastSequence) + 1
	}
	return e.LastSequence - e.OffsetDelta
}

// decodeProducerSnapshot decodes and checks a producer snapshot: version,
// CRC, and an entry count that matches the size. The error says where.
func decodeProducerSnapshot(b []byte) ([]producerSnapshotEntry, int64, error) {
	if len(b) < producerSnapshotHeader {
		return nil, 0, fmt.Errorf("%d bytes: shorter than the %d-byte header", len(b), producerSnapshotHeader)
	}
	if v := int16(binary.BigEndian.Uint16(b)); v != producerSnapshotVersion {
		return nil, 0, fmt.Errorf("unknown snapshot version %d (only %d exists)", v, producerSnapshotVersion)
	}
	stored := binary.BigEndian.Uint32(b[producerSnapshotCRCOffset:])
	if got := crc32.Checksum(b[producerSnapshotCRCOffset+4:], castagnoli); got != stored {
		return nil, producerSnapshotCRCOffset, fmt.Errorf("CRC mismatch: stored %d, computed %d", stored, got)
	}
	n := int32(binary.BigEndian.Uint32(b[6:]))
	if n < 0 || int64(n)*producerSnapshotEntrySize != int64(len(b)-producerSnapshotHeader) {
		return nil, 6, fmt.Errorf("entry count %d does not match the %d bytes of entries", n, len(b)-producerSnapshotHeader)
	}
	out := make([]producerSnapshotEntry, 0, n)
	for p := producerSnapshotHeader; p < len(b); p += producerSnapshotEntrySize {
		e := b[p:]
		out = append(out, producerSnapshotEntry{
			ProducerID:            int64(binary.BigEndian.Uint64(e[0:])),
			Epoch:                 int16(binary.BigEndian.Uint16(e[8:])),
			LastSequence:          int32(binary.BigEndian.Uint32(e[10:])),
			LastOffset:            int64(binary.BigEndian.Uint64(e[14:])),
			OffsetDelta:           int32(binary.BigEndian.Uint32(e[22:])),
			Timestamp:             int64(binary.BigEndian.Uint64(e[26:])),
			CoordinatorEpoch:      int32(binary.BigEndian.Uint32(e[34:])),
			CurrentTxnFirstOffset: int64(binary.BigEndian.Uint64(e[38:])),
		})
	}
	return out, 0, nil
}

type abortedTxnLine struct {
	Type string `json:"type"`
	File string `json:"file"`
	abortedTxn
}

func (d *dumper) dumpTxnIndex(path string, base int64) {
	b, ok := d.readSmallFile(path)
	if !ok {
		return
	}
	txns, probs := decodeTxnIndex(b, base)
	for _, t := range txns {
		d.textf("version: %d producerId: %d firstOffset: %d lastOffset: %d lastStableOffset: %d",
			t.Version, t.ProducerID, t.FirstOffset, t.LastOffset, t.LastStableOffset)
		d.object(abortedTxnLine{Type: "aborted_txn", File: path, abortedTxn: t})
	}
	for _, p := range probs {
		d.fail(path, p.pos, "%s", p.msg)
	}
}

type producerLine struct {
	Type string `json:"type"`
	File string `json:"file"`
	producerSnapshotEntry
	FirstSequence *int32 `json:"first_sequence"` // null: no batch metadata
}

func (d *dumper) dumpSnapshot(path string) {
	b, ok := d.readSmallFile(path)
	if !ok {
		return
	}
	entries, pos, err := decodeProducerSnapshot(b)
	if err != nil {
		d.fail(path, pos, "%v", err)
		return
	}
	for _, e := range entries {
		line := producerLine{Type: "producer", File: path, producerSnapshotEntry: e}
		text := fmt.Sprintf("producerId: %d producerEpoch: %d coordinatorEpoch: %d currentTxnFirstOffset: %d lastTimestamp: %d",
			e.ProducerID, e.Epoch, e.CoordinatorEpoch, e.CurrentTxnFirstOffset, e.Timestamp)
		if e.LastOffset >= 0 { // Kafka keeps batch metadata only then
			fs := e.firstSequence()
			line.FirstSequence = &fs
			text += fmt.Sprintf(" firstSequence: %d lastSequence: %d lastOffset: %d offsetDelta: %d timestamp: %d",
				fs, e.LastSequence, e.LastOffset, e.OffsetDelta, e.Timestamp)
		}
		d.textf("%s", text)
		d.object(line)
	}
}
