package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/moldau/moldau/log"
)

// maxDumpDecompressed bounds the decompressed size of one batch, so a
// corrupt or hostile file cannot make the dump allocate without limit.
const maxDumpDecompressed = 256 << 20

type dumpBatch struct {
	Type                 string       `json:"type"`
	File                 string       `json:"file"`
	Position             int64        `json:"position"`
	BaseOffset           int64        `json:"base_offset"`
	LastOffset           int64        `json:"last_offset"`
	Count                int32        `json:"count"`
	BaseSequence         int32        `json:"base_sequence"`
	LastSequence         int32        `json:"last_sequence"`
	ProducerID           int64        `json:"producer_id"`
	ProducerEpoch        int16        `json:"producer_epoch"`
	PartitionLeaderEpoch int32        `json:"partition_leader_epoch"`
	IsTransactional      bool         `json:"is_transactional"`
	IsControl            bool         `json:"is_control"`
	DeleteHorizonMs      *int64       `json:"delete_horizon_ms"`
	TimestampType        string       `json:"timestamp_type"`
	BaseTimestamp        int64        `json:"base_timestamp"`
	MaxTimestamp         int64        `json:"max_timestamp"`
	Size                 int          `json:"size"`
	Magic                int8         `json:"magic"`
	Compression          string       `json:"compression"`
	CRC                  uint32       `json:"crc"`
	Valid                bool         `json:"valid"`
	Records              []dumpRecord `json:"records,omitempty"`
}

type dumpRecord struct {
	Offset     int64           `json:"offset"`
	Timestamp  int64           `json:"timestamp"`
	KeySize    int             `json:"key_size"`   // -1: null
	ValueSize  int             `json:"value_size"` // -1: null
	Sequence   int32           `json:"sequence"`
	HeaderKeys []string        `json:"header_keys"`
	Control    *controlMarker  `json:"control,omitempty"`
	Data       *dumpRecordData `json:"data,omitempty"` // with --print-data-log
}

type controlMarker struct {
	Type             string `json:"type"`
	TypeID           int16  `json:"type_id"`
	CoordinatorEpoch *int32 `json:"coordinator_epoch,omitempty"`
}

type dumpRecordData struct {
	Key           *string      `json:"key"`
	KeyEncoding   string       `json:"key_encoding,omitempty"`
	Value         *string      `json:"value"`
	ValueEncoding string       `json:"value_encoding,omitempty"`
	Headers       []jsonHeader `json:"headers"`
}

// dumpLog decodes a .log segment batch by batch, reading only one batch at
// a time.
func (d *dumper) dumpLog(path string, base int64) {
	f, err := os.Open(path)
	if err != nil {
		d.fail(path, -1, "%v", unwrapPathError(err))
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		d.fail(path, -1, "%v", err)
		return
	}
	size := st.Size()
	limit := size
	if d.o.maxBytes > 0 {
		limit = min(size, d.o.maxBytes)
	}
	d.textf("Log starting offset: %d", base)
	d.stats.segments++
	defer func() { d.offset = -1 }()
	var buf []byte
	prevLast := base - 1 // the offsets of a segment start at its base
	lastRecord := int64(-1)
	var pos int64
	for pos < limit {
		d.offset = prevLast + 1 // where the next batch should start
		rest := limit - pos
		if rest < log.BatchHeaderSize {
			if d.o.maxBytes == 0 {
				d.fail(path, pos, "%d bytes at the end are not a whole batch (torn write?)", rest)
			}
			return
		}
		buf = grow(buf, log.BatchHeaderSize)
		if _, err := f.ReadAt(buf[:log.BatchHeaderSize], pos); err != nil {
			d.fail(path, pos, "reading: %v", err)
			return
		}
		h, err := log.ParseBatchHeader(buf[:log.BatchHeaderSize])
		if err != nil {
			d.fail(path, pos, "%v; %d bytes from here are not decoded", err, size-pos)
			return
		}
		n := int64(h.TotalSize())
		d.offset = h.BaseOffset
		if n > rest {
			if d.o.maxBytes == 0 || pos+n > size {
				d.fail(path, pos, "the batch at offset %d claims %d bytes but only %d remain (torn write?)", h.BaseOffset, n, size-pos)
			}
			return
		}
		buf = grow(buf, int(n))
		if _, err := f.ReadAt(buf[:n], pos); err != nil && err != io.EOF {
			d.fail(path, pos, "reading: %v", err)
			return
		}
		batch := buf[:n]
		_, crcErr := log.CheckBatch(batch)
		b := batchOf(path, pos, h, crcErr == nil)
		if crcErr != nil {
			d.fail(path, pos, "%v", crcErr)
		}
		d.stats.batches++
		d.stats.records += int64(max(h.NumRecords, 0))
		d.stats.bytes += n
		if h.BaseOffset <= prevLast {
			d.offset = prevLast + 1
			d.fail(path, pos, "batch offsets %d-%d do not follow offset %d", h.BaseOffset, h.LastOffset(), prevLast)
			d.offset = h.BaseOffset
		}
		if h.LastOffsetDelta < 0 || h.NumRecords < 0 || h.LastOffsetDelta < h.NumRecords-1 {
			d.fail(path, pos, "batch header is inconsistent: lastOffsetDelta %d with %d records", h.LastOffsetDelta, h.NumRecords)
		}
		prevLast = max(prevLast, h.LastOffset())
		if d.o.deep && crcErr == nil {
			b.Records = d.decodeRecords(path, pos, h, batch, &lastRecord)
		}
		d.printBatch(&b)
		pos += n
	}
}

func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

func batchOf(path string, pos int64, h log.BatchHeader, valid bool) dumpBatch {
	b := dumpBatch{Type: "batch", File: path, Position: pos, BaseOffset: h.BaseOffset, LastOffset: h.LastOffset(),
		Count: h.NumRecords, BaseSequence: h.BaseSequence, LastSequence: lastSequence(h),
		ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, PartitionLeaderEpoch: h.PartitionLeaderEpoch,
		IsTransactional: h.IsTransactional(), IsControl: h.IsControl(), TimestampType: timestampType(h),
		BaseTimestamp: h.BaseTimestamp, MaxTimestamp: h.MaxTimestamp, Size: h.TotalSize(), Magic: h.Magic,
		Compression: log.CodecName(h.Codec()), CRC: h.CRC, Valid: valid}
	if h.Attributes&log.AttrDeleteHorizon != 0 {
		dh := h.BaseTimestamp
		b.DeleteHorizonMs = &dh
	}
	return b
}

func timestampType(h log.BatchHeader) string {
	if h.LogAppendTime() {
		return "LogAppendTime"
	}
	return "CreateTime"
}

// lastSequence is the sequence of the batch's last record, wrapping at
// MaxInt32 as Kafka's DefaultRecordBatch.incrementSequence does.
func lastSequence(h log.BatchHeader) int32 {
	return incrementSequence(h.BaseSequence, h.LastOffsetDelta)
}

func incrementSequence(seq, inc int32) int32 {
	if seq < 0 {
		return -1
	}
	if seq > math.MaxInt32-inc {
		return inc - (math.MaxInt32 - seq) - 1
	}
	return seq + inc
}

// decodeRecords decompresses and walks a (CRC-valid) batch's records,
// checking their framing, count and offsets.
func (d *dumper) decodeRecords(path string, pos int64, h log.BatchHeader, batch []byte, lastRecord *int64) []dumpRecord {
	payload := batch[log.BatchHeaderSize:]
	if h.Codec() != log.CodecNone {
		out, err := log.Decompress(nil, h.Codec(), payload, maxDumpDecompressed)
		if err != nil {
			d.fail(path, pos, "decompressing the records of the batch at offset %d: %v", h.BaseOffset, err)
			return nil
		}
		payload = out
	}
	recs := []dumpRecord{}
	it := log.NewRecordIter(payload)
	var r log.Record
	prevDelta := int32(-1)
	for {
		ok, err := it.Next(&r)
		if err != nil {
			d.fail(path, pos, "record %d of the batch at offset %d: %v", len(recs), h.BaseOffset, err)
			return recs
		}
		if !ok {
			break
		}
		if r.OffsetDelta <= prevDelta || r.OffsetDelta > h.LastOffsetDelta {
			d.fail(path, pos, "record %d of the batch at offset %d has offset delta %d after %d (last delta %d)",
				len(recs), h.BaseOffset, r.OffsetDelta, prevDelta, h.LastOffsetDelta)
		}
		prevDelta = r.OffsetDelta
		off := h.BaseOffset + int64(r.OffsetDelta)
		if *lastRecord >= 0 && off != *lastRecord+1 {
			d.notef("%s: offset %d is followed by %d (normal after compaction)", path, *lastRecord, off)
		}
		*lastRecord = off
		recs = append(recs, d.recordOf(h, &r, off))
	}
	if int32(len(recs)) != h.NumRecords {
		d.fail(path, pos, "the batch at offset %d says %d records but holds %d", h.BaseOffset, h.NumRecords, len(recs))
	}
	return recs
}

func (d *dumper) recordOf(h log.BatchHeader, r *log.Record, off int64) dumpRecord {
	ts := h.BaseTimestamp + r.TimestampDelta
	if h.LogAppendTime() {
		ts = h.MaxTimestamp
	}
	dr := dumpRecord{Offset: off, Timestamp: ts, KeySize: sizeOrNull(r.Key), ValueSize: sizeOrNull(r.Value),
		Sequence: incrementSequence(h.BaseSequence, r.OffsetDelta), HeaderKeys: []string{}}
	var headers []jsonHeader
	hi := log.NewHeaderIter(r)
	for {
		k, v, ok := hi.Next()
		if !ok {
			break
		}
		dr.HeaderKeys = append(dr.HeaderKeys, string(k))
		if d.o.data {
			jh := jsonHeader{Key: string(k)}
			if ek := encodeBytes(k); ek.value != nil {
				jh.Key, jh.KeyEncoding = *ek.value, ek.encoding
			}
			ev := encodeBytes(v)
			jh.Value, jh.ValueEncoding = ev.value, ev.encoding
			headers = append(headers, jh)
		}
	}
	if h.IsControl() {
		dr.Control = controlOf(r)
	} else if d.o.data {
		k, v := encodeBytes(r.Key), encodeBytes(r.Value)
		if headers == nil {
			headers = []jsonHeader{}
		}
		dr.Data = &dumpRecordData{Key: k.value, KeyEncoding: k.encoding, Value: v.value, ValueEncoding: v.encoding, Headers: headers}
	}
	return dr
}

func sizeOrNull(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

// Control record types (Kafka's ControlRecordType).
var controlTypes = map[int16]string{0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER",
	4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}

// controlOf decodes a control record: the key is (version int16, type
// int16); an ABORT or COMMIT marker's value is (version int16,
// coordinatorEpoch int32).
func controlOf(r *log.Record) *controlMarker {
	c := &controlMarker{Type: "UNKNOWN", TypeID: -1}
	if len(r.Key) < 4 {
		return c
	}
	c.TypeID = int16(binary.BigEndian.Uint16(r.Key[2:]))
	if name, ok := controlTypes[c.TypeID]; ok {
		c.Type = name
	}
	if (c.TypeID == 0 || c.TypeID == 1) && len(r.Value) >= 6 {
		ce := int32(binary.BigEndian.Uint32(r.Value[2:]))
		c.CoordinatorEpoch = &ce
	}
	return c
}

// printBatch prints a batch and its records, in kafka-dump-log's words.
func (d *dumper) printBatch(b *dumpBatch) {
	if d.e.json {
		d.object(b)
		return
	}
	dh := "none"
	if b.DeleteHorizonMs != nil {
		dh = strconv.FormatInt(*b.DeleteHorizonMs, 10)
	}
	d.textf("baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d producerId: %d producerEpoch: %d "+
		"partitionLeaderEpoch: %d isTransactional: %t isControl: %t deleteHorizonMs: %s position: %d %s: %d size: %d "+
		"magic: %d compresscodec: %s crc: %d isvalid: %t",
		b.BaseOffset, b.LastOffset, b.Count, b.BaseSequence, b.LastSequence, b.ProducerID, b.ProducerEpoch,
		b.PartitionLeaderEpoch, b.IsTransactional, b.IsControl, dh, b.Position, b.TimestampType, b.MaxTimestamp, b.Size,
		b.Magic, b.Compression, b.CRC, b.Valid)
	for _, r := range b.Records {
		var sb strings.Builder
		fmt.Fprintf(&sb, "| offset: %d %s: %d keySize: %d valueSize: %d sequence: %d headerKeys: [%s]",
			r.Offset, b.TimestampType, r.Timestamp, r.KeySize, r.ValueSize, r.Sequence, strings.Join(r.HeaderKeys, ","))
		if c := r.Control; c != nil {
			if c.CoordinatorEpoch != nil {
				fmt.Fprintf(&sb, " endTxnMarker: %s coordinatorEpoch: %d", c.Type, *c.CoordinatorEpoch)
			} else {
				fmt.Fprintf(&sb, " controlType: %s(%d)", c.Type, c.TypeID)
			}
		}
		if r.Data != nil {
			if r.Data.Key != nil {
				fmt.Fprintf(&sb, " key: %s", printable(r.Data.Key, r.Data.KeyEncoding))
			}
			if r.Data.Value != nil {
				fmt.Fprintf(&sb, " payload: %s", printable(r.Data.Value, r.Data.ValueEncoding))
			}
			for _, h := range r.Data.Headers {
				fmt.Fprintf(&sb, " header: %s=%s", printable(&h.Key, h.KeyEncoding), printable(h.Value, h.ValueEncoding))
			}
		}
		d.textf("%s", sb.String())
	}
}

// printable shows bytes as text if they are printable UTF-8, else
// Go-quoted (which shows invalid bytes as \x escapes).
func printable(s *string, encoding string) string {
	if s == nil {
		return "null"
	}
	b, err := decodeBytes(s, encoding)
	if err != nil {
		return *s
	}
	if utf8.Valid(b) && !strings.ContainsFunc(string(b), func(r rune) bool { return !unicode.IsPrint(r) }) && !strings.HasPrefix(string(b), `"`) {
		return string(b)
	}
	return strconv.Quote(string(b))
}

// logScan is the batch headers of a .log, for checking index entries.
type logScan struct {
	batches []scannedBatch // in file order: positions and offsets grow
	size    int64
	err     error // why the scan stopped early, or the file is missing
}

type scannedBatch struct {
	pos, lastOffset, maxTimestamp int64
}

// scanLog reads the batch headers of path (cached). It stops quietly at
// the first bad header: dumping the .log itself reports that.
func (d *dumper) scanLog(path string) *logScan {
	if s, ok := d.scans[path]; ok {
		return s
	}
	s := &logScan{}
	d.scans[path] = s
	f, err := os.Open(path)
	if err != nil {
		s.err = unwrapPathError(err)
		return s
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		s.err = err
		return s
	}
	s.size = st.Size()
	hdr := make([]byte, log.BatchHeaderSize)
	for pos := int64(0); pos+log.BatchHeaderSize <= s.size; {
		if _, err := f.ReadAt(hdr, pos); err != nil {
			s.err = err
			return s
		}
		h, err := log.ParseBatchHeader(hdr)
		if err != nil || pos+int64(h.TotalSize()) > s.size {
			return s
		}
		s.batches = append(s.batches, scannedBatch{pos: pos, lastOffset: h.LastOffset(), maxTimestamp: h.MaxTimestamp})
		pos += int64(h.TotalSize())
	}
	return s
}

func (s *logScan) atPosition(pos int64) (scannedBatch, bool) {
	i := sort.Search(len(s.batches), func(i int) bool { return s.batches[i].pos >= pos })
	if i < len(s.batches) && s.batches[i].pos == pos {
		return s.batches[i], true
	}
	return scannedBatch{}, false
}

func (s *logScan) endingAt(offset int64) (scannedBatch, bool) {
	i := sort.Search(len(s.batches), func(i int) bool { return s.batches[i].lastOffset >= offset })
	if i < len(s.batches) && s.batches[i].lastOffset == offset {
		return s.batches[i], true
	}
	return scannedBatch{}, false
}

// logPathFor is the .log of the segment an index file belongs to.
func logPathFor(indexPath string) string {
	stem, _, _ := strings.Cut(filepath.Base(indexPath), ".")
	return filepath.Join(filepath.Dir(indexPath), stem+log.LogFileSuffix)
}

type indexEntry struct {
	Type     string `json:"type"`
	File     string `json:"file"`
	Offset   int64  `json:"offset"`
	Position int32  `json:"position"`
}

// dumpIndex prints an offset index and checks each entry against the
// .log: the batch at the entry's position must end at the entry's offset.
func (d *dumper) dumpIndex(path string, base int64) {
	b, ok := d.readSmallFile(path)
	if !ok {
		return
	}
	entries, sanityErr := log.DecodeOffsetIndex(b, base)
	if len(entries) == 0 && sanityErr == nil {
		d.textf("%s is empty.", path)
	}
	scan := d.scanLog(logPathFor(path))
	if scan.err != nil {
		d.notef("%s: entries not checked: %v", path, scan.err)
	}
	for i, en := range entries {
		if !d.o.verifyOnly {
			d.textf("offset: %d position: %d", en.Offset, en.Position)
			d.object(indexEntry{Type: "index_entry", File: path, Offset: en.Offset, Position: en.Position})
		}
		if scan.err != nil {
			continue
		}
		switch bt, found := scan.atPosition(int64(en.Position)); {
		case !found:
			d.fail(path, int64(i*log.OffsetIndexEntrySize), "entry %d (offset %d) points at position %d, where no batch of %s starts", i, en.Offset, en.Position, logPathFor(path))
		case bt.lastOffset != en.Offset:
			d.fail(path, int64(i*log.OffsetIndexEntrySize), "entry %d says offset %d at position %d, but the batch there ends at offset %d", i, en.Offset, en.Position, bt.lastOffset)
		}
	}
	if sanityErr != nil {
		d.fail(path, -1, "%v (the broker rebuilds such an index at start-up)", sanityErr)
	}
}

type timeIndexEntry struct {
	Type      string `json:"type"`
	File      string `json:"file"`
	Timestamp int64  `json:"timestamp"`
	Offset    int64  `json:"offset"`
}

// dumpTimeIndex prints a time index and checks each entry against the
// .log: a batch must end at the entry's offset with the entry's timestamp
// as its max timestamp.
func (d *dumper) dumpTimeIndex(path string, base int64) {
	b, ok := d.readSmallFile(path)
	if !ok {
		return
	}
	entries, sanityErr := log.DecodeTimeIndex(b, base)
	if len(entries) == 0 && sanityErr == nil {
		d.textf("%s is empty.", path)
	}
	scan := d.scanLog(logPathFor(path))
	if scan.err != nil {
		d.notef("%s: entries not checked: %v", path, scan.err)
	}
	for i, en := range entries {
		if !d.o.verifyOnly {
			d.textf("timestamp: %d offset: %d", en.Timestamp, en.Offset)
			d.object(timeIndexEntry{Type: "time_index_entry", File: path, Timestamp: en.Timestamp, Offset: en.Offset})
		}
		if scan.err != nil {
			continue
		}
		switch bt, found := scan.endingAt(en.Offset); {
		case !found:
			d.fail(path, int64(i*log.TimeIndexEntrySize), "entry %d (timestamp %d) names offset %d, but no batch of %s ends there", i, en.Timestamp, en.Offset, logPathFor(path))
		case bt.maxTimestamp != en.Timestamp:
			d.fail(path, int64(i*log.TimeIndexEntrySize), "entry %d says timestamp %d at offset %d, but that batch's max timestamp is %d", i, en.Timestamp, en.Offset, bt.maxTimestamp)
		}
	}
	if sanityErr != nil {
		d.fail(path, -1, "%v (the broker rebuilds such an index at start-up)", sanityErr)
	}
}
