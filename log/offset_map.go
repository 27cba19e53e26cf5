package log

import (
	"crypto/md5"
	"encoding/binary"
	"fmt"
)

// offsetMapEntrySize is the bytes one entry of the offset map takes: the
// 16-byte MD5 of a key and an 8-byte offset (Kafka's SkimpyOffsetMap with
// its default hash, MD5).
const offsetMapEntrySize = md5.Size + 8

// skimpyOffsetMap maps the MD5 of a record key to the offset of the key's
// last record in the dirty section (Kafka's SkimpyOffsetMap): an
// open-addressing table in one byte slice, 24 bytes an entry, probed first
// by successive 4-byte windows of the hash, then linearly. Two keys with
// the same MD5 are one key to the cleaner, as in Kafka.
//
// Its memory is bounded by the share of log.cleaner.dedupe.buffer.size of
// one cleaner thread (maxSlots entries), but a pass sizes the table to what
// it can need (the number of offsets it covers, over the load factor), so
// cleaning a small log does not touch the whole budget. Not safe for
// concurrent use: each cleaner thread has its own.
type skimpyOffsetMap struct {
	maxSlots   int
	buf        []byte // slots*offsetMapEntrySize bytes in use
	slots      int
	entries    int
	lastOffset int64
	lookups    int64
	probes     int64
	hash       [md5.Size]byte
}

// newSkimpyOffsetMap returns a map that may use up to memory bytes.
func newSkimpyOffsetMap(memory int64) *skimpyOffsetMap {
	return &skimpyOffsetMap{maxSlots: int(min(memory, 1<<31-1) / offsetMapEntrySize), lastOffset: -1}
}

// reset empties the map and sizes it to slots entries (at most maxSlots).
// The memory is allocated on first use and reused.
func (m *skimpyOffsetMap) reset(slots int) {
	slots = max(min(slots, m.maxSlots), 1)
	n := slots * offsetMapEntrySize
	if cap(m.buf) < n {
		m.buf = make([]byte, n)
	} else {
		m.buf = m.buf[:n]
		clear(m.buf)
	}
	m.slots, m.entries, m.lastOffset, m.lookups, m.probes = slots, 0, -1, 0, 0
}

// positionOf is the byte position of the attempt-th probe for hash
// (Kafka's positionOf).
func (m *skimpyOffsetMap) positionOf(hash *[md5.Size]byte, attempt int) int {
	window := min(attempt, md5.Size-4)
	probe := int64(int32(binary.BigEndian.Uint32(hash[window:]))) + int64(max(0, attempt-md5.Size+4))
	if probe < 0 {
		probe = -probe
	}
	m.probes++
	return int(probe%int64(m.slots)) * offsetMapEntrySize
}

func (m *skimpyOffsetMap) isEmpty(pos int) bool {
	e := m.buf[pos : pos+offsetMapEntrySize]
	return binary.LittleEndian.Uint64(e) == 0 && binary.LittleEndian.Uint64(e[8:]) == 0 && binary.LittleEndian.Uint64(e[16:]) == 0
}

// put records offset as the latest offset of key. The map must not be
// full (size < slots).
func (m *skimpyOffsetMap) put(key []byte, offset int64) error {
	if m.entries >= m.slots {
		return fmt.Errorf("log cleaner: offset map is full (%d entries)", m.entries)
	}
	m.lookups++
	m.hash = md5.Sum(key)
	for attempt := 0; ; attempt++ {
		pos := m.positionOf(&m.hash, attempt)
		if m.isEmpty(pos) {
			copy(m.buf[pos:], m.hash[:])
			binary.BigEndian.PutUint64(m.buf[pos+md5.Size:], uint64(offset))
			m.entries++
			m.lastOffset = offset
			return nil
		}
		if [md5.Size]byte(m.buf[pos:pos+md5.Size]) == m.hash {
			binary.BigEndian.PutUint64(m.buf[pos+md5.Size:], uint64(offset))
			m.lastOffset = offset
			return nil
		}
	}
}

// get returns the latest offset of key, or -1 if the key is not in the map.
func (m *skimpyOffsetMap) get(key []byte) int64 {
	m.lookups++
	m.hash = md5.Sum(key)
	maxAttempts := m.slots + md5.Size - 4
	for attempt := 0; attempt < maxAttempts; attempt++ {
		pos := m.positionOf(&m.hash, attempt)
		if m.isEmpty(pos) {
			return -1
		}
		if [md5.Size]byte(m.buf[pos:pos+md5.Size]) == m.hash {
			return int64(binary.BigEndian.Uint64(m.buf[pos+md5.Size:]))
		}
	}
	return -1
}

// size is the number of distinct keys (hashes) in the map.
func (m *skimpyOffsetMap) size() int { return m.entries }

// latestOffset is the largest offset the map covers, -1 if none.
func (m *skimpyOffsetMap) latestOffset() int64 { return m.lastOffset }

// updateLatestOffset moves the offset the map covers up to (Kafka's
// updateLatestOffset: past batches without keys, offset gaps).
func (m *skimpyOffsetMap) updateLatestOffset(offset int64) { m.lastOffset = offset }

// utilization is the share of the thread's whole budget the last pass
// filled (Kafka's utilization, which is over the whole buffer).
func (m *skimpyOffsetMap) utilization() float64 {
	if m.maxSlots == 0 {
		return 0
	}
	return float64(m.entries) / float64(m.maxSlots)
}
