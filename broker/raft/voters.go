package raft

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
)

// The voter set as data (KIP-853). Kafka keeps the voters in the metadata
// log's control records: a KRaftVersionRecord (type 5) says kraft.version,
// a VotersRecord (type 6) holds the whole set, each voter with its
// directory id, endpoints and supported kraft.version range. A snapshot
// holds both right after its header. A quorum started from the static
// controller.quorum.voters has neither (kraft.version 0) until its first
// change, which writes both in one control batch.

// Control record types of KIP-853.
const (
	ControlKRaftVersion int16 = 5
	ControlVoters       int16 = 6
)

// Endpoint is one listener of a voter (VotersRecord's Endpoint).
type Endpoint struct {
	Name string
	Host string
	Port uint16
}

// Addr is host:port.
func (e Endpoint) Addr() string { return net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))) }

// Voter is one voter of the quorum (VotersRecord's Voter).
type Voter struct {
	ID          int32
	DirectoryID [16]byte // zero: unknown (a voter of controller.quorum.voters)
	Endpoints   []Endpoint
	// The kraft.version range the voter supports.
	MinKRaftVersion, MaxKRaftVersion int16
}

// Addr is the address of the voter's listener named name, or of its first
// listener if none is.
func (v Voter) Addr(name string) string {
	for _, e := range v.Endpoints {
		if e.Name == name {
			return e.Addr()
		}
	}
	if len(v.Endpoints) > 0 {
		return v.Endpoints[0].Addr()
	}
	return ""
}

// VoterSet is the quorum's voters, sorted by id.
type VoterSet []Voter

// IDs returns the voters' ids, in order.
func (s VoterSet) IDs() []int32 {
	ids := make([]int32, len(s))
	for i, v := range s {
		ids[i] = v.ID
	}
	return ids
}

// Get returns the voter with id.
func (s VoterSet) Get(id int32) (Voter, bool) {
	for _, v := range s {
		if v.ID == id {
			return v, true
		}
	}
	return Voter{}, false
}

// with returns the set with v added (or replacing the voter of its id).
func (s VoterSet) with(v Voter) VoterSet {
	out := slices.DeleteFunc(slices.Clone(s), func(o Voter) bool { return o.ID == v.ID })
	out = append(out, v)
	slices.SortFunc(out, func(a, b Voter) int { return int(a.ID) - int(b.ID) })
	return out
}

// without returns the set without the voter id.
func (s VoterSet) without(id int32) VoterSet {
	return slices.DeleteFunc(slices.Clone(s), func(o Voter) bool { return o.ID == id })
}

// staticVoterSet is the voter set of controller.quorum.voters: ids and
// addresses, no directory ids (Kafka's kraft.version 0 set).
func staticVoterSet(voters map[int32]string, listener string) VoterSet {
	var s VoterSet
	for id, addr := range voters {
		v := Voter{ID: id, MinKRaftVersion: 0, MaxKRaftVersion: 1}
		if host, port, err := net.SplitHostPort(addr); err == nil {
			if p, err := strconv.ParseUint(port, 10, 16); err == nil {
				v.Endpoints = []Endpoint{{Name: listener, Host: host, Port: uint16(p)}}
			}
		}
		s = append(s, v)
	}
	slices.SortFunc(s, func(a, b Voter) int { return int(a.ID) - int(b.ID) })
	return s
}

// votersValue is a VotersRecord v0 (flexible).
func votersValue(s VoterSet) []byte {
	b := make([]byte, 2, 64) // version 0
	b = binary.AppendUvarint(b, uint64(len(s))+1)
	for _, v := range s {
		b = binary.BigEndian.AppendUint32(b, uint32(v.ID))
		b = append(b, v.DirectoryID[:]...)
		b = binary.AppendUvarint(b, uint64(len(v.Endpoints))+1)
		for _, e := range v.Endpoints {
			b = appendCompactString(b, e.Name)
			b = appendCompactString(b, e.Host)
			b = binary.BigEndian.AppendUint16(b, e.Port)
			b = append(b, 0) // tags
		}
		b = binary.BigEndian.AppendUint16(b, uint16(v.MinKRaftVersion))
		b = binary.BigEndian.AppendUint16(b, uint16(v.MaxKRaftVersion))
		b = append(b, 0, 0) // the feature's tags, the voter's tags
	}
	return append(b, 0)
}

// kraftVersionValue is a KRaftVersionRecord v0 (flexible).
func kraftVersionValue(version int16) []byte {
	return []byte{0, 0, byte(uint16(version) >> 8), byte(version), 0}
}

func appendCompactString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s))+1)
	return append(b, s...)
}

// recordReader reads the fields of a flexible message.
type recordReader struct {
	b   []byte
	err error
}

var errMalformedVoters = errors.New("raft: malformed VotersRecord")

func (r *recordReader) take(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		r.err = errMalformedVoters
		return make([]byte, max(n, 0))
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *recordReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.err = errMalformedVoters
		return 0
	}
	r.b = r.b[k:]
	return v
}

func (r *recordReader) int16() int16   { return int16(binary.BigEndian.Uint16(r.take(2))) }
func (r *recordReader) uint16() uint16 { return binary.BigEndian.Uint16(r.take(2)) }
func (r *recordReader) int32() int32   { return int32(binary.BigEndian.Uint32(r.take(4))) }

func (r *recordReader) compactString() string {
	n := r.uvarint()
	if n == 0 {
		r.err = errMalformedVoters
		return ""
	}
	return string(r.take(int(min(n-1, uint64(len(r.b)+1)))))
}

// skipTags skips a tagged-field section.
func (r *recordReader) skipTags() {
	for range r.uvarint() {
		r.uvarint()
		r.take(int(min(r.uvarint(), uint64(len(r.b)+1))))
	}
}

// compactLen reads a compact array length (null is an error).
func (r *recordReader) compactLen() int {
	n := r.uvarint()
	if n == 0 || n-1 > uint64(len(r.b)) {
		r.err = errMalformedVoters
		return 0
	}
	return int(n - 1)
}

// parseVoters parses a VotersRecord v0.
func parseVoters(v []byte) (VoterSet, error) {
	r := &recordReader{b: v}
	if ver := r.int16(); r.err == nil && ver != 0 {
		return nil, fmt.Errorf("raft: VotersRecord version %d, only 0 is known", ver)
	}
	var s VoterSet
	for range r.compactLen() {
		var voter Voter
		voter.ID = r.int32()
		copy(voter.DirectoryID[:], r.take(16))
		for range r.compactLen() {
			var e Endpoint
			e.Name, e.Host, e.Port = r.compactString(), r.compactString(), r.uint16()
			r.skipTags()
			voter.Endpoints = append(voter.Endpoints, e)
		}
		voter.MinKRaftVersion, voter.MaxKRaftVersion = r.int16(), r.int16()
		r.skipTags()
		r.skipTags()
		if r.err != nil {
			break
		}
		s = append(s, voter)
	}
	r.skipTags()
	if r.err != nil {
		return nil, r.err
	}
	slices.SortFunc(s, func(a, b Voter) int { return int(a.ID) - int(b.ID) })
	return s, nil
}

// parseKRaftVersion parses a KRaftVersionRecord v0.
func parseKRaftVersion(v []byte) (int16, error) {
	r := &recordReader{b: v}
	r.int16()
	ver := r.int16()
	if r.err != nil {
		return 0, errors.New("raft: malformed KRaftVersionRecord")
	}
	return ver, nil
}

// votersOf returns the voter set a batch holds, if it is a control batch
// with a VotersRecord.
func votersOf(b []byte) (VoterSet, bool) {
	h, err := parseHeader(b)
	if err != nil || !h.IsControl() {
		return nil, false
	}
	batch, _, err := decodeBatch(b)
	if err != nil || batch.voters == nil {
		return nil, false
	}
	return batch.voters, true
}

// confChange is the etcd change from one voter set to the next, which
// differ by one voter (one change at a time, as Kafka does).
func confChangeBetween(from, to VoterSet) (add, remove []int32) {
	for _, v := range to {
		if _, ok := from.Get(v.ID); !ok {
			add = append(add, v.ID)
		}
	}
	for _, v := range from {
		if _, ok := to.Get(v.ID); !ok {
			remove = append(remove, v.ID)
		}
	}
	return add, remove
}
