package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// The transaction index, Kafka's TransactionIndex: per segment, a
// "%020d.txnindex" file of the transactions whose ABORT marker is in the
// segment, in marker order, 34 big-endian bytes each (Kafka's AbortedTxn):
//
//	version           int16  0
//	producerId        int64
//	firstOffset       int64  the transaction's first offset
//	lastOffset        int64  the offset of its ABORT marker
//	lastStableOffset  int64  the last stable offset once it was aborted
//
// The file is created with its first entry (a segment without aborts has
// none) and is not preallocated. Its entries are also kept in memory
// (Segment.txnIdx, guarded by Log.segMu), so a read_committed fetch does
// not read the file. An entry is written when its marker is appended,
// fsynced with the segment, and rebuilt by recovery.

// AbortedTxnSize is the size of a transaction index entry.
const AbortedTxnSize = 34

// AbortedTxn is one aborted transaction: the producer, the offset of its
// first record, the offset of its ABORT marker (LastOffset) and the last
// stable offset when it was aborted.
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

// AppendAbortedTxn appends the index entry of t to dst.
func AppendAbortedTxn(dst []byte, t AbortedTxn) []byte {
	be := binary.BigEndian
	dst = be.AppendUint16(dst, 0)
	dst = be.AppendUint64(dst, uint64(t.ProducerID))
	dst = be.AppendUint64(dst, uint64(t.FirstOffset))
	dst = be.AppendUint64(dst, uint64(t.LastOffset))
	return be.AppendUint64(dst, uint64(t.LastStableOffset))
}

// EncodeTxnIndex encodes entries as a transaction index file (the log
// cleaner writes a cleaned segment's with it).
func EncodeTxnIndex(txns []AbortedTxn) []byte {
	b := make([]byte, 0, len(txns)*AbortedTxnSize)
	for _, t := range txns {
		b = AppendAbortedTxn(b, t)
	}
	return b
}

// DecodeTxnIndex decodes the transaction index of the segment at base,
// with Kafka's sanity check (TransactionIndex.sanityCheck: a known version
// and no entry ending below the segment) plus whole entries in increasing
// marker order.
func DecodeTxnIndex(b []byte, base int64) ([]AbortedTxn, error) {
	if len(b)%AbortedTxnSize != 0 {
		return nil, fmt.Errorf("transaction index of %d bytes is not whole %d-byte entries", len(b), AbortedTxnSize)
	}
	be := binary.BigEndian
	out := make([]AbortedTxn, 0, len(b)/AbortedTxnSize)
	for i := 0; i < len(b); i += AbortedTxnSize {
		e := b[i:]
		if v := int16(be.Uint16(e)); v != 0 {
			return nil, fmt.Errorf("unexpected aborted transaction version %d at position %d", v, i)
		}
		t := AbortedTxn{
			ProducerID:       int64(be.Uint64(e[2:])),
			FirstOffset:      int64(be.Uint64(e[10:])),
			LastOffset:       int64(be.Uint64(e[18:])),
			LastStableOffset: int64(be.Uint64(e[26:])),
		}
		if t.LastOffset < base {
			return nil, fmt.Errorf("last offset %d of aborted transaction is below the segment's base offset %d", t.LastOffset, base)
		}
		if n := len(out); n > 0 && t.LastOffset <= out[n-1].LastOffset {
			return nil, fmt.Errorf("last offset %d of aborted transaction does not follow %d", t.LastOffset, out[n-1].LastOffset)
		}
		out = append(out, t)
	}
	return out, nil
}

func (s *Segment) txnIndexPath() string { return segmentPath(s.dir, s.baseOffset, TxnIndexFileSuffix) }

// loadTxnIndex reads the segment's transaction index, if it has one.
func (s *Segment) loadTxnIndex() error {
	b, err := ReadFile(s.fsys, s.txnIndexPath())
	if errors.Is(err, os.ErrNotExist) {
		s.txnIdx = nil
		return nil
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	txns, derr := DecodeTxnIndex(b, s.baseOffset)
	if derr != nil {
		return &indexError{derr}
	}
	s.txnIdx = txns
	return nil
}

// indexError is a corrupt index: the segment must be recovered.
type indexError struct{ err error }

func (e *indexError) Error() string { return e.err.Error() }
func (e *indexError) Unwrap() error { return e.err }

// writeTxnIndexEntry writes t at the end of the index file (creating it).
// The in-memory entry is added by the caller, under Log.segMu.
func (s *Segment) writeTxnIndexEntry(t AbortedTxn) error {
	if n := len(s.txnIdx); n > 0 && t.LastOffset <= s.txnIdx[n-1].LastOffset {
		return fmt.Errorf("aborted transaction ending at %d does not follow %d in %s", t.LastOffset, s.txnIdx[n-1].LastOffset, s.txnIndexPath())
	}
	pos := int64(len(s.txnIdx) * AbortedTxnSize)
	return withIndexFile(s.fsys, s.txnIndexPath(), func(f File) error {
		_, err := f.WriteAt(AppendAbortedTxn(nil, t), pos)
		return err
	})
}

// truncateTxnIndex drops the entries of markers at or after offset
// (Kafka's TransactionIndex.truncateTo) from memory, and returns how many
// entries the file must keep (-1: unchanged). Log.segMu held.
func (s *Segment) truncateTxnIndex(offset int64) int {
	n := 0
	for n < len(s.txnIdx) && s.txnIdx[n].LastOffset < offset {
		n++
	}
	if n == len(s.txnIdx) {
		return -1
	}
	s.txnIdx = s.txnIdx[:n]
	return n
}

// truncateTxnIndexFile cuts the index file to n entries (removes it for
// 0); n < 0 does nothing.
func (s *Segment) truncateTxnIndexFile(n int) error {
	switch {
	case n < 0:
		return nil
	case n == 0:
		if err := s.fsys.Remove(s.txnIndexPath()); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	return withExistingIndexFile(s.fsys, s.txnIndexPath(), func(f File) error { return f.Truncate(int64(n * AbortedTxnSize)) })
}

// collectAbortedTxns returns the segment's aborted transactions that
// overlap [fetchOffset, upperBound) and whether the search is complete
// (an entry's last stable offset reached upperBound, so no later segment
// can hold one that overlaps): Kafka's collectAbortedTxns. Log.segMu held.
func (s *Segment) collectAbortedTxns(dst []AbortedTxn, fetchOffset, upperBound int64) ([]AbortedTxn, bool) {
	for _, t := range s.txnIdx {
		if t.LastOffset >= fetchOffset && t.FirstOffset < upperBound {
			dst = append(dst, t)
		}
		if t.LastStableOffset >= upperBound {
			return dst, true
		}
	}
	return dst, false
}
