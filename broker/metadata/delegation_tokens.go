package metadata

import (
	"maps"
	"slices"
)

// Delegation tokens (KIP-48, in KRaft KIP-900; Kafka's DelegationTokenImage
// and DelegationTokenDelta): per token id, the owner, requester, renewers
// and timestamps. As in Kafka the HMAC is not stored: it is the
// HMAC-SHA512 of the token id keyed by delegation.token.secret.key, and
// every node that holds the secret recomputes it.

// Record API keys of the delegation token records.
const (
	DelegationTokenRecordType       RecordType = 10
	RemoveDelegationTokenRecordType RecordType = 26
)

// DelegationToken is a token's information (Kafka's TokenInformation).
// Principals are "Type:name" strings, as Kafka writes them in the record.
type DelegationToken struct {
	TokenID   string
	Owner     string
	Requester string
	Renewers  []string
	IssueMs   int64
	MaxMs     int64
	ExpiryMs  int64
}

// DelegationTokenRecord (key 10, v0) creates or renews a token.
type DelegationTokenRecord struct {
	Owner               string
	Requester           string
	Renewers            []string
	IssueTimestamp      int64
	MaxTimestamp        int64
	ExpirationTimestamp int64
	TokenID             string
}

func (*DelegationTokenRecord) Type() RecordType    { return DelegationTokenRecordType }
func (*DelegationTokenRecord) writeVersion() int16 { return 0 }
func (*DelegationTokenRecord) maxVersion() int16   { return 0 }
func (x *DelegationTokenRecord) encode(w *writer, _ int16) {
	w.str(x.Owner)
	w.str(x.Requester)
	w.arrayLen(len(x.Renewers))
	for _, s := range x.Renewers {
		w.str(s)
	}
	w.i64(x.IssueTimestamp)
	w.i64(x.MaxTimestamp)
	w.i64(x.ExpirationTimestamp)
	w.str(x.TokenID)
	w.noTags()
}
func (x *DelegationTokenRecord) decode(r *reader, _ int16) {
	x.Owner = r.str()
	x.Requester = r.str()
	n := r.arrayLen(1)
	x.Renewers = make([]string, 0, max(n, 0))
	for i := 0; i < n && r.ok(); i++ {
		x.Renewers = append(x.Renewers, r.str())
	}
	x.IssueTimestamp = r.i64()
	x.MaxTimestamp = r.i64()
	x.ExpirationTimestamp = r.i64()
	x.TokenID = r.str()
	r.tags(nil)
}

// RemoveDelegationTokenRecord (key 26, v0) removes an expired token.
type RemoveDelegationTokenRecord struct {
	TokenID string
}

func (*RemoveDelegationTokenRecord) Type() RecordType    { return RemoveDelegationTokenRecordType }
func (*RemoveDelegationTokenRecord) writeVersion() int16 { return 0 }
func (*RemoveDelegationTokenRecord) maxVersion() int16   { return 0 }
func (x *RemoveDelegationTokenRecord) encode(w *writer, _ int16) {
	w.str(x.TokenID)
	w.noTags()
}
func (x *RemoveDelegationTokenRecord) decode(r *reader, _ int16) {
	x.TokenID = r.str()
	r.tags(nil)
}

// Token is the record's token information.
func (x *DelegationTokenRecord) Token() DelegationToken {
	return DelegationToken{TokenID: x.TokenID, Owner: x.Owner, Requester: x.Requester,
		Renewers: slices.Clone(x.Renewers), IssueMs: x.IssueTimestamp, MaxMs: x.MaxTimestamp,
		ExpiryMs: x.ExpirationTimestamp}
}

// Record is the token as the record that recreates it.
func (t DelegationToken) Record() *DelegationTokenRecord {
	return &DelegationTokenRecord{Owner: t.Owner, Requester: t.Requester,
		Renewers: slices.Clone(t.Renewers), IssueTimestamp: t.IssueMs, MaxTimestamp: t.MaxMs,
		ExpirationTimestamp: t.ExpiryMs, TokenID: t.TokenID}
}

// replayDelegationToken applies a token record to the delta.
func (d *Delta) replayDelegationToken(rec Record) {
	switch r := rec.(type) {
	case *DelegationTokenRecord:
		t := r.Token()
		d.tokens[r.TokenID] = &t
	case *RemoveDelegationTokenRecord:
		d.tokens[r.TokenID] = nil
	}
}

// applyDelegationTokens returns the tokens after the delta.
func (d *Delta) applyDelegationTokens() map[string]DelegationToken {
	if len(d.tokens) == 0 {
		return d.base.DelegationTokens
	}
	out := maps.Clone(d.base.DelegationTokens)
	if out == nil {
		out = map[string]DelegationToken{}
	}
	for id, t := range d.tokens {
		if t == nil {
			delete(out, id)
		} else {
			out[id] = *t
		}
	}
	return out
}

// DelegationTokensChanged reports whether the delta changed a token.
func (d *Delta) DelegationTokensChanged() bool { return len(d.tokens) > 0 }

// ChangedDelegationTokens returns the ids of the tokens the delta created,
// renewed or removed.
func (d *Delta) ChangedDelegationTokens() []string {
	return slices.Sorted(maps.Keys(d.tokens))
}

// delegationTokenRecords are the image's tokens as records, for a snapshot.
func (im *Image) delegationTokenRecords() []Record {
	var recs []Record
	for _, id := range slices.Sorted(maps.Keys(im.DelegationTokens)) {
		recs = append(recs, im.DelegationTokens[id].Record())
	}
	return recs
}
