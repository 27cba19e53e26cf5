package metadata

import (
	"cmp"
	"maps"
	"slices"

	"github.com/moldau/moldau/broker/uuid"
)

// ACLs (Kafka's AclsImage and AclsDelta): the access control entries the
// StandardAuthorizer decides on, by id. Each is one AccessControlEntryRecord;
// RemoveAccessControlEntryRecord removes one by id. The codes are Kafka's
// (kmsg's ACLResourceType, ACLResourcePatternType, ACLOperation and
// ACLPermissionType).

// Record API keys of the ACL records.
const (
	AccessControlEntryRecordType       RecordType = 18
	RemoveAccessControlEntryRecordType RecordType = 19
)

// ACL is one access control entry: Kafka's StandardAcl.
type ACL struct {
	ResourceType int8
	ResourceName string
	PatternType  int8 // 3 LITERAL, 4 PREFIXED
	Principal    string
	Host         string
	Operation    int8
	Permission   int8 // 2 DENY, 3 ALLOW
}

// ACLs is the image's set of ACLs. It is immutable once in an image and
// shared by the images after it until an ACL record changes it, so its
// identity (the pointer) tells an authorizer whether to rebuild its index.
type ACLs struct {
	ByID map[uuid.UUID]ACL
}

// Len is the number of ACLs.
func (a *ACLs) Len() int {
	if a == nil {
		return 0
	}
	return len(a.ByID)
}

// Values returns the set's ACLs as a set of values (an ACL's identity
// apart from its id, which CreateAcls deduplicates on).
func (a *ACLs) Values() map[ACL]bool {
	out := map[ACL]bool{}
	if a != nil {
		for _, acl := range a.ByID {
			out[acl] = true
		}
	}
	return out
}

// SortedIDs returns the ids in a stable order (by resource type, name,
// pattern type, then id), for snapshots and DescribeAcls.
func (a *ACLs) SortedIDs() []uuid.UUID {
	if a == nil {
		return nil
	}
	ids := slices.Collect(maps.Keys(a.ByID))
	slices.SortFunc(ids, func(x, y uuid.UUID) int {
		ax, ay := a.ByID[x], a.ByID[y]
		if c := cmp.Compare(ax.ResourceType, ay.ResourceType); c != 0 {
			return c
		}
		if c := cmp.Compare(ax.ResourceName, ay.ResourceName); c != 0 {
			return c
		}
		if c := cmp.Compare(ax.PatternType, ay.PatternType); c != 0 {
			return c
		}
		return slices.Compare(x[:], y[:])
	})
	return ids
}

// AccessControlEntryRecord (key 18, v0) adds an ACL.
type AccessControlEntryRecord struct {
	ID uuid.UUID
	ACL
}

func (*AccessControlEntryRecord) Type() RecordType    { return AccessControlEntryRecordType }
func (*AccessControlEntryRecord) writeVersion() int16 { return 0 }
func (*AccessControlEntryRecord) maxVersion() int16   { return 0 }
func (x *AccessControlEntryRecord) encode(w *writer, _ int16) {
	w.uuid(x.ID)
	w.i8(x.ResourceType)
	w.str(x.ResourceName)
	w.i8(x.PatternType)
	w.str(x.Principal)
	w.str(x.Host)
	w.i8(x.Operation)
	w.i8(x.Permission)
	w.noTags()
}
func (x *AccessControlEntryRecord) decode(r *reader, _ int16) {
	x.ID = r.uuid()
	x.ResourceType = r.i8()
	x.ResourceName = r.str()
	x.PatternType = r.i8()
	x.Principal = r.str()
	x.Host = r.str()
	x.Operation = r.i8()
	x.Permission = r.i8()
	r.tags(nil)
}

// RemoveAccessControlEntryRecord (key 19, v0) removes an ACL by id.
type RemoveAccessControlEntryRecord struct {
	ID uuid.UUID
}

func (*RemoveAccessControlEntryRecord) Type() RecordType {
	return RemoveAccessControlEntryRecordType
}
func (*RemoveAccessControlEntryRecord) writeVersion() int16 { return 0 }
func (*RemoveAccessControlEntryRecord) maxVersion() int16   { return 0 }
func (x *RemoveAccessControlEntryRecord) encode(w *writer, _ int16) {
	w.uuid(x.ID)
	w.noTags()
}
func (x *RemoveAccessControlEntryRecord) decode(r *reader, _ int16) {
	x.ID = r.uuid()
	r.tags(nil)
}

// replayACL applies an ACL record to the delta. Adding an id that exists
// or removing one that does not is an error, as in Kafka's AclsDelta.
func (d *Delta) replayACL(rec Record) bool {
	switch r := rec.(type) {
	case *AccessControlEntryRecord:
		if _, ok := d.currentACL(r.ID); ok {
			return false
		}
		a := r.ACL
		d.acls[r.ID] = &a
	case *RemoveAccessControlEntryRecord:
		if _, ok := d.currentACL(r.ID); !ok {
			return false
		}
		d.acls[r.ID] = nil
	}
	return true
}

func (d *Delta) currentACL(id uuid.UUID) (ACL, bool) {
	if a, ok := d.acls[id]; ok {
		if a == nil {
			return ACL{}, false
		}
		return *a, true
	}
	if d.base.ACLs == nil {
		return ACL{}, false
	}
	a, ok := d.base.ACLs.ByID[id]
	return a, ok
}

// ACLsChanged reports whether the delta added or removed an ACL.
func (d *Delta) ACLsChanged() bool { return len(d.acls) > 0 }

// applyACLs returns the ACLs after the delta: the base's own set when
// nothing changed.
func (d *Delta) applyACLs() *ACLs {
	if len(d.acls) == 0 {
		return d.base.ACLs
	}
	out := &ACLs{ByID: map[uuid.UUID]ACL{}}
	if d.base.ACLs != nil {
		out.ByID = maps.Clone(d.base.ACLs.ByID)
	}
	for id, a := range d.acls {
		if a == nil {
			delete(out.ByID, id)
		} else {
			out.ByID[id] = *a
		}
	}
	return out
}

// aclRecords are the image's ACLs as records, for a snapshot.
func (im *Image) aclRecords() []Record {
	var recs []Record
	for _, id := range im.ACLs.SortedIDs() {
		recs = append(recs, &AccessControlEntryRecord{ID: id, ACL: im.ACLs.ByID[id]})
	}
	return recs
}

func aclID(rec Record) uuid.UUID {
	switch r := rec.(type) {
	case *AccessControlEntryRecord:
		return r.ID
	case *RemoveAccessControlEntryRecord:
		return r.ID
	}
	return uuid.Zero
}
