package metadata

import (
	"maps"
	"slices"
	"strings"
)

// SCRAM credentials (Kafka's ScramImage and ScramDelta): per user and
// mechanism, the salt, stored key, server key and iterations the
// controller derived from an AlterUserScramCredentials upsertion. The
// password is never stored.

// Record API keys of the SCRAM credential records.
const (
	UserScramCredentialRecordType       RecordType = 11
	RemoveUserScramCredentialRecordType RecordType = 22
)

// ScramKey names one credential: a user and a mechanism (1 SCRAM-SHA-256,
// 2 SCRAM-SHA-512, Kafka's ScramMechanism type).
type ScramKey struct {
	User      string
	Mechanism int8
}

// ScramCredential is a stored SCRAM credential.
type ScramCredential struct {
	Salt, StoredKey, ServerKey []byte
	Iterations                 int32
}

// UserScramCredentialRecord (key 11, v0) sets a user's credential for a
// mechanism.
type UserScramCredentialRecord struct {
	Name      string
	Mechanism int8
	Salt      []byte
	StoredKey []byte
	ServerKey []byte
	// Iterations of the salted password (4096 to 16384).
	Iterations int32
}

func (*UserScramCredentialRecord) Type() RecordType    { return UserScramCredentialRecordType }
func (*UserScramCredentialRecord) writeVersion() int16 { return 0 }
func (*UserScramCredentialRecord) maxVersion() int16   { return 0 }
func (x *UserScramCredentialRecord) encode(w *writer, _ int16) {
	w.str(x.Name)
	w.i8(x.Mechanism)
	w.bytes(x.Salt)
	w.bytes(x.StoredKey)
	w.bytes(x.ServerKey)
	w.i32(x.Iterations)
	w.noTags()
}
func (x *UserScramCredentialRecord) decode(r *reader, _ int16) {
	x.Name = r.str()
	x.Mechanism = r.i8()
	x.Salt = r.bytes()
	x.StoredKey = r.bytes()
	x.ServerKey = r.bytes()
	x.Iterations = r.i32()
	r.tags(nil)
}

// RemoveUserScramCredentialRecord (key 22, v0) removes a user's
// credential for a mechanism.
type RemoveUserScramCredentialRecord struct {
	Name      string
	Mechanism int8
}

func (*RemoveUserScramCredentialRecord) Type() RecordType {
	return RemoveUserScramCredentialRecordType
}
func (*RemoveUserScramCredentialRecord) writeVersion() int16 { return 0 }
func (*RemoveUserScramCredentialRecord) maxVersion() int16   { return 0 }
func (x *RemoveUserScramCredentialRecord) encode(w *writer, _ int16) {
	w.str(x.Name)
	w.i8(x.Mechanism)
	w.noTags()
}
func (x *RemoveUserScramCredentialRecord) decode(r *reader, _ int16) {
	x.Name = r.str()
	x.Mechanism = r.i8()
	r.tags(nil)
}

// replayScram applies a SCRAM credential record to the delta.
func (d *Delta) replayScram(rec Record) {
	switch r := rec.(type) {
	case *UserScramCredentialRecord:
		d.scram[ScramKey{r.Name, r.Mechanism}] = &ScramCredential{
			Salt: r.Salt, StoredKey: r.StoredKey, ServerKey: r.ServerKey, Iterations: r.Iterations,
		}
	case *RemoveUserScramCredentialRecord:
		d.scram[ScramKey{r.Name, r.Mechanism}] = nil
	}
}

// applyScram returns the credentials after the delta.
func (d *Delta) applyScram() map[ScramKey]ScramCredential {
	if len(d.scram) == 0 {
		return d.base.Scram
	}
	out := maps.Clone(d.base.Scram)
	if out == nil {
		out = map[ScramKey]ScramCredential{}
	}
	for k, c := range d.scram {
		if c == nil {
			delete(out, k)
		} else {
			out[k] = *c
		}
	}
	return out
}

// ScramChanged reports whether the delta changed a SCRAM credential.
func (d *Delta) ScramChanged() bool { return len(d.scram) > 0 }

// SortedScramKeys returns the credentials' keys by user, then mechanism.
func (im *Image) SortedScramKeys() []ScramKey {
	keys := slices.Collect(maps.Keys(im.Scram))
	slices.SortFunc(keys, func(a, b ScramKey) int {
		if c := strings.Compare(a.User, b.User); c != 0 {
			return c
		}
		return int(a.Mechanism) - int(b.Mechanism)
	})
	return keys
}

// scramRecords are the image's credentials as records, for a snapshot.
func (im *Image) scramRecords() []Record {
	var recs []Record
	for _, k := range im.SortedScramKeys() {
		c := im.Scram[k]
		recs = append(recs, &UserScramCredentialRecord{Name: k.User, Mechanism: k.Mechanism,
			Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: c.Iterations})
	}
	return recs
}
