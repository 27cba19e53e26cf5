package remote

import (
	"encoding/binary"
	"fmt"
)

// MetadataPartition returns the partition of __remote_log_metadata that
// carries tp's events (Kafka's RemoteLogMetadataTopicPartitioner
// .metadataPartition): murmur2 of a 4-byte big-endian hash of the topic id
// and the partition, made positive, modulo numPartitions. The hash is
// Java's Objects.hash(leastSigBits, mostSigBits, partition), which does not
// depend on the topic name (checked against Kafka's source: toBytes writes
// that int big-endian). numPartitions must be positive.
func MetadataPartition(tp TopicIdPartition, numPartitions int) int32 {
	if numPartitions <= 0 {
		panic(fmt.Sprintf("remote: MetadataPartition with %d partitions", numPartitions))
	}
	msb := int64(binary.BigEndian.Uint64(tp.TopicID[:8]))
	lsb := int64(binary.BigEndian.Uint64(tp.TopicID[8:]))
	h := int32(1)
	h = 31*h + javaLongHash(lsb)
	h = 31*h + javaLongHash(msb)
	h = 31*h + tp.Partition
	var buf [4]byte
	binary.BigEndian.PutUint32(buf[:], uint32(h))
	return int32(int(murmur2(buf[:])&0x7fffffff) % numPartitions)
}

// javaLongHash is Java's Long.hashCode.
func javaLongHash(v int64) int32 { return int32(v ^ int64(uint64(v)>>32)) }

// murmur2 is Kafka's Utils.murmur2 (seed 0x9747b28c).
func murmur2(data []byte) int32 {
	const m, r = 0x5bd1e995, 24
	n := len(data)
	h := uint32(0x9747b28c) ^ uint32(n)
	for i := 0; i+4 <= n; i += 4 {
		k := binary.LittleEndian.Uint32(data[i:])
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := data[n&^3:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}
