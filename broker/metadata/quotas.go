package metadata

import (
	"maps"
	"slices"
	"sort"
)

// Client quota entity types (Kafka's ClientQuotaEntity).
const (
	QuotaUser     = "user"
	QuotaClientID = "client-id"
	QuotaIP       = "ip"
)

// QuotaName is one part of a quota entity: whether the entity has it
// (Set), and its name or the default (Default: a null name).
type QuotaName struct {
	Set     bool
	Default bool
	Name    string
}

// QuotaEntity names a client quota entity: a user, a client id, both, or
// an ip; each may be a default. It is comparable, a map key.
type QuotaEntity struct {
	User, ClientID, IP QuotaName
}

// QuotaEntityFrom builds an entity from (type, name) pairs; ok is false for
// an unknown type or a type given twice.
func QuotaEntityFrom(parts []QuotaEntityData) (e QuotaEntity, ok bool) {
	for _, p := range parts {
		var n *QuotaName
		switch p.EntityType {
		case QuotaUser:
			n = &e.User
		case QuotaClientID:
			n = &e.ClientID
		case QuotaIP:
			n = &e.IP
		default:
			return QuotaEntity{}, false
		}
		if n.Set {
			return QuotaEntity{}, false
		}
		n.Set = true
		if p.EntityName == nil {
			n.Default = true
		} else {
			n.Name = *p.EntityName
		}
	}
	return e, true
}

// Data returns the entity's (type, name) pairs, in type order.
func (e QuotaEntity) Data() []QuotaEntityData {
	var out []QuotaEntityData
	add := func(typ string, n QuotaName) {
		if !n.Set {
			return
		}
		d := QuotaEntityData{EntityType: typ}
		if !n.Default {
			name := n.Name
			d.EntityName = &name
		}
		out = append(out, d)
	}
	add(QuotaClientID, e.ClientID)
	add(QuotaIP, e.IP)
	add(QuotaUser, e.User)
	return out
}

// SortedQuotaEntities returns the entities with quotas, in a stable order.
func (im *Image) SortedQuotaEntities() []QuotaEntity {
	out := slices.Collect(maps.Keys(im.ClientQuotas))
	key := func(e QuotaEntity) string {
		s := ""
		for _, d := range e.Data() {
			s += d.EntityType + "="
			if d.EntityName == nil {
				s += "\x00"
			} else {
				s += *d.EntityName
			}
			s += ";"
		}
		return s
	}
	sort.Slice(out, func(i, j int) bool { return key(out[i]) < key(out[j]) })
	return out
}

// replayClientQuota applies a ClientQuotaRecord to the delta.
func (d *Delta) replayClientQuota(r *ClientQuotaRecord) bool {
	e, ok := QuotaEntityFrom(r.Entity)
	if !ok {
		return false
	}
	cur, had := d.quotas[e]
	if !had {
		cur = d.base.ClientQuotas[e]
	}
	next := maps.Clone(cur)
	if next == nil {
		next = map[string]float64{}
	}
	if r.Remove {
		delete(next, r.Key)
	} else {
		next[r.Key] = r.Value
	}
	if len(next) == 0 {
		next = nil
	}
	d.quotas[e] = next
	return true
}

// applyQuotas returns the client quotas after the delta.
func (d *Delta) applyQuotas() map[QuotaEntity]map[string]float64 {
	if len(d.quotas) == 0 {
		return d.base.ClientQuotas
	}
	out := maps.Clone(d.base.ClientQuotas)
	if out == nil {
		out = map[QuotaEntity]map[string]float64{}
	}
	for e, q := range d.quotas {
		if q == nil {
			delete(out, e)
		} else {
			out[e] = q
		}
	}
	return out
}

// QuotasChanged reports whether the delta changed a client quota.
func (d *Delta) QuotasChanged() bool { return len(d.quotas) > 0 }
